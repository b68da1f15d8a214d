-- +goose Up
-- 0005: Idempotency-Key records of the plugin API (POST /jobs, POST /orders/{id}/clone). Template
-- functions as in 0001: {{ts}} timestamp with zone.
--
-- A request claims its key by inserting a row (status in_progress); the unique index decides which
-- of two concurrent requests wins. The winner marks the row completed in the same transaction that
-- creates the order, so a completed row always names a committed order and an order created under
-- a key always has its completed row. A failed request deletes its claim, so only successes are
-- remembered. Rows expire 24 hours after completion and are then ignored and deleted.

CREATE TABLE idempotency_keys (
    id              TEXT PRIMARY KEY,
    installation_id TEXT NOT NULL REFERENCES installations(id),
    idempotency_key TEXT NOT NULL,
    -- SHA-256 (hex) of the canonical request: method, path and the JSON body re-encoded.
    request_hash    TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('in_progress', 'completed')),
    -- Changes whenever a claim is taken over (an abandoned or expired row), so a request only ever
    -- completes or releases its own claim.
    claim_token     TEXT NOT NULL,
    order_id        TEXT REFERENCES orders(id),
    response_status INTEGER,
    -- The exact bytes of the first answer, replayed verbatim (TEXT, not a JSON type that would
    -- reorder its keys).
    response_body   TEXT,
    created_at      {{ts}} NOT NULL,
    updated_at      {{ts}} NOT NULL,
    expires_at      {{ts}} NOT NULL
);
CREATE UNIQUE INDEX idempotency_keys_installation_key ON idempotency_keys (installation_id, idempotency_key);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (installation_id, expires_at);
