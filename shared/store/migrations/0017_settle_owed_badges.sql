-- No index of the badge raises owed back (issue 32): every batch that ends
-- without reaching a provider now gives its raise back in the transaction
-- that ends it (Tx.settleExpired: the sweep's expiry and a claim's, which
-- were the two that left it to the sweep; a delivery's and a dismissal's
-- already did), so no finished batch holds one and the sweep reads none.
-- The index cost every statement that inserts or ends a batch, though a
-- sent batch never entered it (PostgreSQL opens each index and prepares
-- its predicate anew for each such statement): scripts/pgcount -mode push
-- counts 29,000 instructions a one-phone push fewer without it.
--
-- The raises owed when it runs are given back here, as the sweep's
-- give-back did: each registration's count goes down by what its batches
-- raised in its current epoch, never below 0, and each raise is settled
-- (negated) so that it is given back once.
UPDATE push_devices
SET badge_count = CASE WHEN push_devices.badge_count > o.raised THEN push_devices.badge_count - o.raised ELSE 0 END
FROM (SELECT registration_id, badge_epoch, SUM(badge_raised) AS raised FROM push_delivery_batches
    WHERE badge_raised > 0 AND state <> 'pending' AND state <> 'sent'
    GROUP BY registration_id, badge_epoch) o
WHERE push_devices.registration_id = o.registration_id AND push_devices.badge_epoch = o.badge_epoch
    AND push_devices.badge_count IS NOT NULL;
UPDATE push_delivery_batches SET badge_raised = -badge_raised
WHERE badge_raised > 0 AND state <> 'pending' AND state <> 'sent';
DROP INDEX push_delivery_batches_badge_owed;
