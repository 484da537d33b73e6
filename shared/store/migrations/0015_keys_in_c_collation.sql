-- postgres only
-- The gateway's keys compare byte by byte (issue 32). Every id, token hash
-- and fingerprint the gateway stores is ASCII it or a host generated, that
-- it only tests for equality or orders to break a tie; under the database's
-- collation each comparison of two of them that differ in an index's
-- search went through the C library's strcoll. Every push inserts and
-- looks up keys in a dozen indexes: scripts/pgcount -mode push counts
-- 13,000 fewer instructions a one-phone push with these columns in the C
-- collation in a cluster whose own collation is C.UTF-8, and 74,000 fewer
-- (953,530 -> 879,195) in one whose collation is glibc's en_US.UTF-8,
-- Cloud SQL's default, which costs more per comparison. SQLite
-- compares them so already (its BINARY collation), so the two databases
-- now order them alike. Every column compared with another here is changed
-- together, so that each comparison is in one collation and keeps its
-- index. Changing a column's collation rewrites no table but rebuilds its
-- indexes, under a lock that holds the table's writes meanwhile: the
-- tables hold at most a day of rows (contract.Retention), some seconds per
-- million.
ALTER TABLE push_challenges ALTER COLUMN challenge_id TYPE TEXT COLLATE "C",
    ALTER COLUMN host_fingerprint TYPE TEXT COLLATE "C";
ALTER TABLE push_hosts ALTER COLUMN host_fingerprint TYPE TEXT COLLATE "C";
ALTER TABLE push_sessions ALTER COLUMN token_hash TYPE TEXT COLLATE "C",
    ALTER COLUMN host_fingerprint TYPE TEXT COLLATE "C";
ALTER TABLE push_devices ALTER COLUMN registration_id TYPE TEXT COLLATE "C",
    ALTER COLUMN host_fingerprint TYPE TEXT COLLATE "C", ALTER COLUMN device_id TYPE TEXT COLLATE "C";
ALTER TABLE push_events ALTER COLUMN event_id TYPE TEXT COLLATE "C",
    ALTER COLUMN host_fingerprint TYPE TEXT COLLATE "C", ALTER COLUMN kind TYPE TEXT COLLATE "C";
ALTER TABLE push_event_recipients ALTER COLUMN event_id TYPE TEXT COLLATE "C",
    ALTER COLUMN registration_id TYPE TEXT COLLATE "C", ALTER COLUMN batch_id TYPE TEXT COLLATE "C";
ALTER TABLE push_dismissed_events ALTER COLUMN host_fingerprint TYPE TEXT COLLATE "C",
    ALTER COLUMN notification_epoch TYPE TEXT COLLATE "C", ALTER COLUMN notification_id TYPE TEXT COLLATE "C";
ALTER TABLE push_delivery_batches ALTER COLUMN batch_id TYPE TEXT COLLATE "C",
    ALTER COLUMN host_fingerprint TYPE TEXT COLLATE "C", ALTER COLUMN registration_id TYPE TEXT COLLATE "C";
