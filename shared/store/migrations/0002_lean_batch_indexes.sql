-- Leaner indexes on push_delivery_batches. Every index that names state
-- takes a new entry whenever a batch finishes (the update cannot be HOT), and
-- on SQLite every index page a commit touches is another WAL write. A batch
-- is now indexed by its key plus, while pending, the three partial indexes
-- admission, delivery and the sweep read, and, once finished, by the one the
-- prune reads: four entries when it is admitted, two when it finishes,
-- instead of six and six. The batches table holds at most a day of rows, so
-- building these inside the migration's transaction blocks writes briefly.

DROP INDEX push_delivery_batches_due;
DROP INDEX push_delivery_batches_registration;
DROP INDEX push_delivery_batches_expires;
DROP INDEX push_delivery_batches_finished;

-- The sweep: due batches whose task may be lost, oldest first.
CREATE INDEX push_delivery_batches_pending_due ON push_delivery_batches (due_at)
    WHERE state = 'pending';
-- The sweep: pending batches past their deadline.
CREATE INDEX push_delivery_batches_pending_expires ON push_delivery_batches (expires_at)
    WHERE state = 'pending';
-- The prune: finished batches.
CREATE INDEX push_delivery_batches_finished ON push_delivery_batches (finished_at)
    WHERE state <> 'pending';
