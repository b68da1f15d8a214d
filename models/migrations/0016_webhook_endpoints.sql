-- +goose Up
-- 0016: webhooks integrators manage themselves (issue 24). An installation (plugin API) or a team
-- account (external API, installation_id NULL) has up to 10 endpoints, each subscribed to event
-- types; every event is recorded once (webhook_events, kept 30 days, the events API) and delivered
-- once per subscribed endpoint (webhook_deliveries, one row per event and endpoint). The event's
-- id is the webhook-id of all its deliveries. Template functions as in 0001: {{ts}} timestamp,
-- {{json}} document.
CREATE TABLE webhook_endpoints (
    id                          TEXT PRIMARY KEY,
    account_id                  TEXT NOT NULL REFERENCES accounts(id),
    installation_id             TEXT REFERENCES installations(id),
    url                         TEXT NOT NULL,
    events                      {{json}} NOT NULL,
    description                 TEXT NOT NULL DEFAULT '',
    status                      TEXT NOT NULL DEFAULT 'enabled',
    disabled_reason             TEXT NOT NULL DEFAULT '',
    disabled_at                 {{ts}},
    failing_since               {{ts}},
    secret_enc                  TEXT NOT NULL DEFAULT '',
    previous_secret_enc         TEXT NOT NULL DEFAULT '',
    previous_secret_valid_until {{ts}},
    recovering_since            {{ts}},
    created_at                  {{ts}} NOT NULL,
    updated_at                  {{ts}} NOT NULL,
    deleted_at                  {{ts}}
);
CREATE INDEX webhook_endpoints_installation ON webhook_endpoints (installation_id, created_at, id) WHERE deleted_at IS NULL;
CREATE INDEX webhook_endpoints_account ON webhook_endpoints (account_id, created_at, id) WHERE deleted_at IS NULL AND installation_id IS NULL;

CREATE TABLE webhook_events (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts(id),
    installation_id TEXT REFERENCES installations(id),
    type            TEXT NOT NULL,
    payload         {{json}} NOT NULL,
    order_id        TEXT,
    job_id          TEXT,
    test            BOOLEAN NOT NULL DEFAULT FALSE,
    created_at      {{ts}} NOT NULL
);
CREATE INDEX webhook_events_installation ON webhook_events (installation_id, created_at, id);
CREATE INDEX webhook_events_account ON webhook_events (account_id, created_at, id) WHERE installation_id IS NULL;
CREATE INDEX webhook_events_created ON webhook_events (created_at);

-- Each installation's callback URL becomes its first endpoint, subscribed to the three events it
-- received so far, so a plugin that never calls the new routes sees no change. It dates from the
-- installation, whose callback URL it was.
{{if eq dialect "postgres"}}
INSERT INTO webhook_endpoints (id, account_id, installation_id, url, events, created_at, updated_at)
SELECT gen_random_uuid()::text, account_id, id, callback_url,
       CAST('["job.completed","job.failed","job.cancelled"]' AS JSONB), created_at, updated_at
FROM installations WHERE callback_url <> '';
{{else}}
INSERT INTO webhook_endpoints (id, account_id, installation_id, url, events, created_at, updated_at)
SELECT lower(substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-4' || substr(h, 14, 3) || '-' ||
             substr('89ab', 1 + (abs(random()) % 4), 1) || substr(h, 18, 3) || '-' || substr(h, 21, 12)),
       account_id, id, callback_url, '["job.completed","job.failed","job.cancelled"]',
       created_at, updated_at
FROM (SELECT hex(randomblob(16)) AS h, * FROM installations WHERE callback_url <> '');
{{end}}

-- A delivery belongs to an event and an endpoint; events without a job (endpoint.disabled,
-- webhook.test) have deliveries without one, and the body lives on the event.
{{if eq dialect "postgres"}}
ALTER TABLE webhook_deliveries
    ADD COLUMN endpoint_id TEXT REFERENCES webhook_endpoints(id),
    ADD COLUMN event_id TEXT,
    ALTER COLUMN installation_id DROP NOT NULL,
    ALTER COLUMN job_id DROP NOT NULL,
    ALTER COLUMN order_id DROP NOT NULL,
    ALTER COLUMN payload DROP NOT NULL;
{{else}}
-- SQLite relaxes NOT NULL only by rebuilding the table; foreign keys are deferred to the commit as
-- in 0014 (webhook_attempts references it).
PRAGMA defer_foreign_keys = ON;
CREATE TEMP TABLE webhook_deliveries_0016 AS SELECT * FROM webhook_deliveries;
DROP TABLE webhook_deliveries;
CREATE TABLE webhook_deliveries (
    id               TEXT PRIMARY KEY,
    account_id       TEXT NOT NULL REFERENCES accounts(id),
    installation_id  TEXT REFERENCES installations(id),
    order_id         TEXT REFERENCES orders(id),
    job_id           TEXT REFERENCES jobs(id),
    run              INTEGER NOT NULL,
    event            TEXT NOT NULL,
    payload          {{json}},
    callback_url     TEXT NOT NULL,
    status           TEXT NOT NULL DEFAULT 'pending',
    attempts         INTEGER NOT NULL DEFAULT 0,
    last_status_code INTEGER,
    last_error       TEXT NOT NULL DEFAULT '',
    next_attempt_at  {{ts}},
    created_at       {{ts}} NOT NULL,
    updated_at       {{ts}} NOT NULL,
    delivered_at     {{ts}},
    start_due_at     {{ts}},
    endpoint_id      TEXT REFERENCES webhook_endpoints(id),
    event_id         TEXT
);
INSERT INTO webhook_deliveries (id, account_id, installation_id, order_id, job_id, run, event, payload,
    callback_url, status, attempts, last_status_code, last_error, next_attempt_at, created_at, updated_at,
    delivered_at, start_due_at)
SELECT id, account_id, installation_id, order_id, job_id, run, event, payload,
    callback_url, status, attempts, last_status_code, last_error, next_attempt_at, created_at, updated_at,
    delivered_at, start_due_at
FROM webhook_deliveries_0016;
DROP TABLE webhook_deliveries_0016;
CREATE INDEX webhook_deliveries_installation ON webhook_deliveries (installation_id, created_at);
CREATE INDEX webhook_deliveries_order ON webhook_deliveries (order_id);
CREATE INDEX webhook_deliveries_status ON webhook_deliveries (status, created_at);
CREATE INDEX webhook_deliveries_start_due ON webhook_deliveries (start_due_at) WHERE start_due_at IS NOT NULL;
{{end}}
-- One delivery per event and endpoint replaces one per job run and event.
DROP INDEX IF EXISTS webhook_deliveries_job_event;

-- Every delivery so far is an event of the same id, delivered to its installation's endpoint.
INSERT INTO webhook_events (id, account_id, installation_id, type, payload, order_id, job_id, created_at)
SELECT id, account_id, installation_id, event, payload, order_id, job_id, created_at FROM webhook_deliveries;
UPDATE webhook_deliveries SET event_id = id,
    endpoint_id = (SELECT e.id FROM webhook_endpoints e WHERE e.installation_id = webhook_deliveries.installation_id);
{{if eq dialect "postgres"}}
ALTER TABLE webhook_deliveries ALTER COLUMN event_id SET NOT NULL;
{{end}}
CREATE UNIQUE INDEX webhook_deliveries_event_endpoint ON webhook_deliveries (event_id, endpoint_id);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at);
CREATE INDEX webhook_deliveries_account ON webhook_deliveries (account_id, created_at, id) WHERE installation_id IS NULL;
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);
