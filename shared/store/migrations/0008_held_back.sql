-- Hand-on (issue 29 §1): a registration has one delivery in flight at a
-- time, and a claim that finds another batch of it in flight records when
-- it was held back, so that the lease holder, once its batch ends, claims
-- and delivers it in the same request (store/next.go) instead of each
-- held-back batch being woken by a task of its own. 0: not held back (the
-- batch has its own task, or none is needed yet). A claim that leases the
-- batch, and its end or retry, clear it.
ALTER TABLE push_delivery_batches ADD COLUMN held_at BIGINT NOT NULL DEFAULT 0;
