-- The gateway's tables (contract "Gateway storage"; reference-behaviour §8).
-- One text for PostgreSQL and SQLite. Every time is epoch milliseconds,
-- passed in from Go: SQL never reads a clock.

CREATE TABLE push_hosts (
    host_fingerprint TEXT PRIMARY KEY,
    host_public_key  TEXT NOT NULL,
    created_at       BIGINT NOT NULL,
    last_seen_at     BIGINT NOT NULL
);
CREATE INDEX push_hosts_last_seen ON push_hosts (last_seen_at);

CREATE TABLE push_challenges (
    challenge_id     TEXT PRIMARY KEY,
    host_fingerprint TEXT NOT NULL,
    host_public_key  TEXT NOT NULL,
    secret_hash      TEXT NOT NULL,
    transcript       TEXT NOT NULL,
    expires_at       BIGINT NOT NULL,
    consumed_at      BIGINT
);
CREATE INDEX push_challenges_expires ON push_challenges (expires_at);

CREATE TABLE push_sessions (
    token_hash       TEXT PRIMARY KEY,
    host_fingerprint TEXT NOT NULL,
    expires_at       BIGINT NOT NULL,
    created_at       BIGINT NOT NULL
);
CREATE UNIQUE INDEX push_sessions_host ON push_sessions (host_fingerprint);
CREATE INDEX push_sessions_expires ON push_sessions (expires_at);

CREATE TABLE push_devices (
    registration_id  TEXT PRIMARY KEY,
    host_fingerprint TEXT NOT NULL,
    device_id        TEXT NOT NULL,
    platform         TEXT NOT NULL,
    token            TEXT NOT NULL,
    apns_environment TEXT,
    filter_json      TEXT,
    dead_at          BIGINT,
    created_at       BIGINT NOT NULL,
    -- created_seq orders a host's registrations by creation when several
    -- share a millisecond; it is assigned under the host lock.
    created_seq      BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    UNIQUE (host_fingerprint, device_id)
);
CREATE INDEX push_devices_host_created ON push_devices (host_fingerprint, created_seq);

CREATE TABLE push_events (
    event_id         TEXT PRIMARY KEY,
    host_fingerprint TEXT NOT NULL,
    kind             TEXT NOT NULL,
    fingerprint      TEXT NOT NULL,
    created_at       BIGINT NOT NULL,
    expires_at       BIGINT NOT NULL
);
CREATE INDEX push_events_quota ON push_events (host_fingerprint, kind, created_at);
CREATE INDEX push_events_created ON push_events (created_at);

CREATE TABLE push_event_recipients (
    event_id        TEXT NOT NULL,
    registration_id TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    PRIMARY KEY (event_id, registration_id)
);
CREATE INDEX push_event_recipients_created ON push_event_recipients (created_at);

CREATE TABLE push_dismissed_events (
    host_fingerprint   TEXT NOT NULL,
    notification_epoch TEXT NOT NULL,
    notification_id    TEXT NOT NULL,
    notification_seq   BIGINT NOT NULL,
    created_at         BIGINT NOT NULL,
    PRIMARY KEY (host_fingerprint, notification_epoch, notification_id)
);
CREATE INDEX push_dismissed_events_created ON push_dismissed_events (created_at);

-- A batch is one provider request to one registration: a single alert, a
-- coalesced summary, or a dismissal. payload_json is a JSON array of the
-- members' notifications in arrival order; it is cleared when the batch
-- finishes. scheduled_at is when the batch was last handed to Cloud Tasks,
-- so the sweep re-schedules only batches whose task may be lost.
CREATE TABLE push_delivery_batches (
    batch_id         TEXT PRIMARY KEY,
    host_fingerprint TEXT NOT NULL,
    registration_id  TEXT NOT NULL,
    kind             TEXT NOT NULL,
    payload_json     TEXT NOT NULL,
    members          INTEGER NOT NULL,
    state            TEXT NOT NULL,
    reason           TEXT,
    due_at           BIGINT NOT NULL,
    expires_at       BIGINT NOT NULL,
    lease_token      TEXT,
    lease_until      BIGINT NOT NULL DEFAULT 0,
    attempts         INTEGER NOT NULL DEFAULT 0,
    scheduled_at     BIGINT NOT NULL DEFAULT 0,
    created_at       BIGINT NOT NULL,
    finished_at      BIGINT
);
CREATE INDEX push_delivery_batches_due ON push_delivery_batches (state, due_at);
CREATE INDEX push_delivery_batches_registration ON push_delivery_batches (registration_id, state);
CREATE INDEX push_delivery_batches_expires ON push_delivery_batches (expires_at);
CREATE INDEX push_delivery_batches_finished ON push_delivery_batches (finished_at);
-- Admission reads a registration's pending batches: the open one (due in the
-- future, so the range on due_at stays short) and the unleased ones a
-- dismissal may cancel.
CREATE INDEX push_delivery_batches_pending ON push_delivery_batches (registration_id, due_at)
    WHERE state = 'pending';
