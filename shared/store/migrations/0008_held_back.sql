-- Hand-on (issue 29 §1): a registration has one delivery in flight at a
-- time, and a claim records when it asked for a due batch, so that when it
-- finds another batch of the registration in flight the lease holder, once
-- its batch ends, claims and delivers it in the same request
-- (store/next.go) instead of each held-back batch being woken by a task of
-- its own. 0: no claim asked for it (its own task will). A retry or a
-- release clears it.
ALTER TABLE push_delivery_batches ADD COLUMN held_at BIGINT NOT NULL DEFAULT 0;
