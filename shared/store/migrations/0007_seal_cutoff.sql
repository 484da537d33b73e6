-- Members bound whole (issue 30 §4): a member stored in the clear, as the
-- gateway wrote them before sealing, is read only in a batch stored before
-- this migration, and only for a notification's lifetime after it
-- (Store.PlainMembers): the cut-off is the creation time after the newest
-- batch stored when the migration ran (0 when there was none). It lives
-- apart from the batches so that editing a batch row cannot move it, and an
-- instance reads it once, when it opens the store.
CREATE TABLE push_seal_cutoff (plain_before BIGINT NOT NULL);
INSERT INTO push_seal_cutoff (plain_before) SELECT COALESCE(MAX(created_at) + 1, 0) FROM push_delivery_batches;
