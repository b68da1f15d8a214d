-- +goose Up
-- 0002: webhook deliveries (one per terminal job run of a plugin installation with a callback URL)
-- and every attempt to deliver them. Template functions as in 0001: {{ts}} timestamp, {{json}} document.

CREATE TABLE webhook_deliveries (
    id               TEXT PRIMARY KEY,
    account_id       TEXT NOT NULL REFERENCES accounts(id),
    installation_id  TEXT NOT NULL REFERENCES installations(id),
    order_id         TEXT NOT NULL REFERENCES orders(id),
    job_id           TEXT NOT NULL REFERENCES jobs(id),
    run              INTEGER NOT NULL,
    event            TEXT NOT NULL,
    payload          {{json}} NOT NULL,
    callback_url     TEXT NOT NULL,
    status           TEXT NOT NULL DEFAULT 'pending',
    attempts         INTEGER NOT NULL DEFAULT 0,
    last_status_code INTEGER,
    last_error       TEXT NOT NULL DEFAULT '',
    next_attempt_at  {{ts}},
    created_at       {{ts}} NOT NULL,
    updated_at       {{ts}} NOT NULL,
    delivered_at     {{ts}}
);
-- One delivery per job run and event: a retried or replayed activity never creates a second one.
CREATE UNIQUE INDEX webhook_deliveries_job_event ON webhook_deliveries (job_id, run, event);
CREATE INDEX webhook_deliveries_installation ON webhook_deliveries (installation_id, created_at);
CREATE INDEX webhook_deliveries_order ON webhook_deliveries (order_id);
CREATE INDEX webhook_deliveries_status ON webhook_deliveries (status, created_at);

CREATE TABLE webhook_attempts (
    id          TEXT PRIMARY KEY,
    delivery_id TEXT NOT NULL REFERENCES webhook_deliveries(id),
    attempt     INTEGER NOT NULL,
    replay      BOOLEAN NOT NULL DEFAULT FALSE,
    started_at  {{ts}} NOT NULL,
    status_code INTEGER,
    latency_ms  BIGINT NOT NULL DEFAULT 0,
    error       TEXT NOT NULL DEFAULT '',
    created_at  {{ts}} NOT NULL
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, created_at);
