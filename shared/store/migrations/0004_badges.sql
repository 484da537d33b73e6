-- App-icon badges (issue "What the phone shows"): opt-in per registration.
--
-- badge_count is the registration's badge: NULL until its host sets it with
-- PUT /v1/devices/{registrationId}/badge (the registration is then opted in
-- and stays so), raised by every alert push by the number of notifications
-- it carries, set back to 0 by a new token.
-- badge is the number a batch's push carries, recorded at its first attempt
-- so that a retry carries the same (the count moves once per push, not per
-- attempt); NULL for a batch whose registration has no badge, and for
-- dismissals, which carry none.
ALTER TABLE push_devices ADD COLUMN badge_count BIGINT;
ALTER TABLE push_delivery_batches ADD COLUMN badge BIGINT;
