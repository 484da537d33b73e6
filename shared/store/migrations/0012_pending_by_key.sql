-- postgres only
-- Neither index of pending batches can be read whole by a statement that
-- looks a batch up by its key, nor the one by due time by a statement that
-- reads a registration's batches (issue 32). Both were partial indexes on
-- state = 'pending' alone, which every such statement implies: most of the
-- time a gateway has almost no batch pending, so the planner, costing a
-- scan of a nearly empty index below a probe of the key's, read the whole
-- index instead, and a connection keeps such a generic plan for its life.
-- When a burst elsewhere then left thousands of batches pending, every
-- claim, outcome and lease probe of every push read all of them
-- (scripts/pgcount -mode push -pending 2000: 9.1 M instructions a push
-- instead of 1.0 M). Each index now also names a column only the
-- statements it serves test: a registration's batches (registration_id,
-- which every statement that reads them compares, so that instances of the
-- previous version, during a rollout, still read them by it) and the
-- sweep's (scheduled_at: LostBatches compares it, ExpireOverdue states
-- scheduled_at >= 0). Both conditions hold for every row: the columns are
-- NOT NULL. SQLite keeps the indexes on state alone: its planner picks an
-- index by rules, not by a table's statistics, and prefers the key's, so it
-- never read a pending index whole; and some of its versions take IS NOT
-- NULL of a NOT NULL column for true, which would leave them no index of
-- pending batches at all (TestSQLitePendingIndexes). The batches table holds at most a day of
-- rows, so building these inside the migration's transaction blocks writes
-- briefly; an instance of the previous version expires overdue batches by a
-- scan until it is replaced (its statement names no scheduled_at).
DROP INDEX push_delivery_batches_pending;
CREATE INDEX push_delivery_batches_pending ON push_delivery_batches (registration_id, due_at)
    WHERE state = 'pending' AND registration_id IS NOT NULL;
DROP INDEX push_delivery_batches_pending_due;
CREATE INDEX push_delivery_batches_pending_due ON push_delivery_batches (due_at)
    WHERE state = 'pending' AND scheduled_at IS NOT NULL;
