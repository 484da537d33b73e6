-- Delivery receipts (issue "delivery receipts"): what became of each
-- recipient, read by POST /v1/receipts, derived from the batch that carries
-- it and recorded in the transactions that already record each outcome.
--
-- batch_id links a recipient to the batch that carries it: the batch it
-- opened, set when it is recorded, or the open batch it joined. Its state,
-- reason and times are the recipient's while it stays a member.
-- ordinal orders an event's recipients as they were first accepted, under
-- the host lock (on SQLite one more than the event's highest; on PostgreSQL
-- from the transaction's id, see store.startSendStmt).
-- state and state_at, when set, are a recipient's own end that its batch
-- does not tell: 'dismissed' when a dismissal took it out of a batch that
-- went on with other members, or fenced it before it joined any.
-- Rows recorded before this migration have no batch and no state; a
-- receipt leaves them out.
ALTER TABLE push_event_recipients ADD COLUMN batch_id TEXT;
ALTER TABLE push_event_recipients ADD COLUMN ordinal BIGINT NOT NULL DEFAULT 0;
ALTER TABLE push_event_recipients ADD COLUMN state TEXT;
ALTER TABLE push_event_recipients ADD COLUMN state_at BIGINT;

-- attempted_at is when a pending batch's last attempt failed retryably (its
-- reason is then the provider's): a receipt reads it as retrying since then.
ALTER TABLE push_delivery_batches ADD COLUMN attempted_at BIGINT;
