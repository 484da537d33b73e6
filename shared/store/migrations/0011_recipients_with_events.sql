-- A recipient is pruned with its event (issue 32), no longer by its own
-- time: a receipt reads an event's recipients through the event
-- (store.Receipts), so a recipient whose event is gone tells nothing, and
-- the index on created_at that the prune read was written on every send,
-- once per registration, for the prune alone (8,000 of PostgreSQL's
-- instructions per recipient, scripts/pgcount -mode push).
--
-- The recipients an earlier prune left without their event (one recorded
-- after its event, by a send that repeated the event's id) go now; from
-- here on Store.Prune deletes an event's recipients in the transaction that
-- deletes it. An instance of the previous version still running prunes
-- recipients by created_at without the index (a scan, correct) until it is
-- replaced. The DELETE (a scan of the recipients, one day of them) comes
-- first, so that DROP INDEX's exclusive lock, which makes sends wait, is
-- held only from the DROP to the commit.
DELETE FROM push_event_recipients
    WHERE NOT EXISTS (SELECT 1 FROM push_events e WHERE e.event_id = push_event_recipients.event_id);
DROP INDEX push_event_recipients_created;
