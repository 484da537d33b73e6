-- One index for the sweep (issue 32): every pending batch is written to each
-- index it is in, and each partial index's predicate is prepared again by
-- every statement that inserts a batch or ends one, so an index costs every
-- push. The sweep's expiry now reads the due-time index too: a pending
-- batch's deadline is never more than the coalescing window (at most
-- contract.MaxCoalesce) before its due time (only a join lowers a deadline
-- below it, JoinBatch; a retry or a release past the deadline ends the
-- batch instead), so every batch past its deadline at now is due by
-- now + MaxCoalesce (Store.ExpireOverdue).
DROP INDEX push_delivery_batches_pending_expires;
