-- +goose Up
-- 0019: Idempotency-Key on the external API's POST routes (issue 25, point 4). The plugin API's
-- keys belong to an installation; the external API's to a team account, which has no
-- installation. A key's scope becomes either: installation_id (NULL for an account's key) or
-- account_id (NULL for an installation's key), exactly one of the two, each with its own unique
-- index that arbitrates concurrent claims (api/idempotency). Rows written before 0019 are
-- installations' keys and stay as they are. Template functions as in 0001: {{ts}} timestamp with
-- zone.
{{if eq dialect "postgres"}}
ALTER TABLE idempotency_keys
    ALTER COLUMN installation_id DROP NOT NULL,
    ADD COLUMN account_id TEXT REFERENCES accounts(id),
    ADD CONSTRAINT idempotency_keys_one_scope CHECK ((installation_id IS NULL) <> (account_id IS NULL));
{{else}}
-- SQLite relaxes NOT NULL and adds a CHECK only by rebuilding the table. No table references
-- idempotency_keys, so nothing else is rebuilt.
CREATE TEMP TABLE idempotency_keys_0019 AS SELECT * FROM idempotency_keys;
DROP TABLE idempotency_keys;
CREATE TABLE idempotency_keys (
    id               TEXT PRIMARY KEY,
    installation_id  TEXT REFERENCES installations(id),
    idempotency_key  TEXT NOT NULL,
    request_hash     TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('in_progress', 'completed')),
    claim_token      TEXT NOT NULL,
    order_id         TEXT REFERENCES orders(id),
    response_status  INTEGER,
    response_body    TEXT,
    created_at       {{ts}} NOT NULL,
    updated_at       {{ts}} NOT NULL,
    expires_at       {{ts}} NOT NULL,
    response_headers TEXT,
    account_id       TEXT REFERENCES accounts(id),
    CONSTRAINT idempotency_keys_one_scope CHECK ((installation_id IS NULL) <> (account_id IS NULL))
);
INSERT INTO idempotency_keys (id, installation_id, idempotency_key, request_hash, status, claim_token, order_id,
    response_status, response_body, created_at, updated_at, expires_at, response_headers)
SELECT id, installation_id, idempotency_key, request_hash, status, claim_token, order_id,
    response_status, response_body, created_at, updated_at, expires_at, response_headers
FROM idempotency_keys_0019;
DROP TABLE idempotency_keys_0019;
CREATE UNIQUE INDEX idempotency_keys_installation_key ON idempotency_keys (installation_id, idempotency_key);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (installation_id, expires_at);
{{end}}
-- An account's keys: installations' rows (account_id NULL) are not in it.
CREATE UNIQUE INDEX idempotency_keys_account_key ON idempotency_keys (account_id, idempotency_key) WHERE account_id IS NOT NULL;
