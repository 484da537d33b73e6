-- postgres only
-- A batch's members are sealed (issue 30): random bytes in base64, which
-- PostgreSQL's compression cannot shrink. A payload past the TOAST threshold
-- (about 2 kB: some seven members) was compressed on every write, the
-- attempt thrown away, and stored out of line all the same; every join
-- rewrites the whole member list, so the attempt grew with the batch.
-- EXTERNAL stores it out of line without trying (issue 33). It applies to
-- values written from now on. SQLite has no such setting.
ALTER TABLE push_delivery_batches ALTER COLUMN payload_json SET STORAGE EXTERNAL;
