-- postgres only
-- A busy host's alert quota read from its session row (issue 32). A send
-- reads its host's session anyway; while the host has many alerts in its
-- quota window, the send updates the session too, and the admission times
-- of the host's last 300 alerts kept there (a ring: alert_n alerts admitted
-- since the ring was built, the k-th at alert_ring[(k - 1) % 300 + 1], in
-- milliseconds after alert_base) tell whether 300 of them fall in the
-- window by one element, where the count read up to 300 rows (0.6 M of
-- PostgreSQL's instructions a send at the quota, scripts/pgcount -mode push
-- -in-window 299). A quiet host keeps counting, which costs it less than
-- the update would (store: startSendText); window_count is the count a
-- counting send read before it admitted the event, which tells when to
-- build the ring. alert_seen is the value of push_events_uncounted when the
-- ring was built. The ring, 1.2 kB, stays
-- in line below the toast threshold; fillfactor 50 keeps room on the row's
-- page for its next version, so that the update stays HOT.
--
-- An instance of the previous version inserts events without naming
-- uncounted, whose default then draws from push_events_uncounted: a ring
-- built before that no longer matches it and is rebuilt from push_events
-- before it decides again (one count per busy host after a rollout). This
-- version names the column (NULL) on every insert. SET DEFAULT after ADD
-- COLUMN: a volatile default given with the column would rewrite the table.
ALTER TABLE push_sessions ADD COLUMN alert_base BIGINT;
ALTER TABLE push_sessions ADD COLUMN alert_n BIGINT;
ALTER TABLE push_sessions ADD COLUMN alert_ring INTEGER[];
ALTER TABLE push_sessions ADD COLUMN alert_seen BIGINT;
ALTER TABLE push_sessions SET (fillfactor = 50);
CREATE SEQUENCE push_events_uncounted;
-- Called once, so that the first nextval moves last_value, which a ring compares.
SELECT setval('push_events_uncounted', 1);
ALTER TABLE push_events ADD COLUMN uncounted BIGINT;
ALTER TABLE push_events ADD COLUMN window_count INTEGER;
ALTER TABLE push_events ALTER COLUMN uncounted SET DEFAULT nextval('push_events_uncounted');
