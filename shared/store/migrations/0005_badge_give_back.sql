-- Honest badges (issue 29 §3): every attempt carries the registration's
-- count as it stands, a push raises it once, at its first attempt, by what
-- it carries (never past 99,999, the largest PUT badge takes), and a push
-- that ends without reaching a provider gives back what it raised, unless
-- the count was set since (PUT badge, a new token).
--
-- badge_epoch counts the times the registration's badge was set: by
-- PUT badge, or back to 0 by a new token. A raise remembers the epoch it
-- was made in, and is given back only in that epoch: a count the phone set
-- after the raise is the phone's, neither lowered below it nor undone.
ALTER TABLE push_devices ADD COLUMN badge_epoch BIGINT NOT NULL DEFAULT 0;
-- badge_raised is what the batch's first attempt added to the count (less
-- than the notifications it carries only at the cap), and badge_epoch the
-- registration's epoch then; NULL before. Once given back it is negated,
-- so it is given back once.
ALTER TABLE push_delivery_batches ADD COLUMN badge_raised BIGINT;
ALTER TABLE push_delivery_batches ADD COLUMN badge_epoch BIGINT;
-- The raises owed back: finished batches that did not reach a provider
-- and still hold one. The sweep settles them (a delivery that ends such a
-- batch gives its raise back at once, the sweep catches the others: a
-- dismissal at admission, an expiry by the sweep itself).
CREATE INDEX push_delivery_batches_badge_owed ON push_delivery_batches (finished_at)
    WHERE badge_raised > 0 AND state <> 'pending' AND state <> 'sent';
-- Counts raised past the cap before it existed.
UPDATE push_devices SET badge_count = 99999 WHERE badge_count > 99999;
