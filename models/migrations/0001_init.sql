-- +goose Up
-- 0001: accounts, installations, API keys, catalog, assets, orders, jobs and the credit ledger.
-- Template functions: {{ts}} timestamp with zone, {{json}} JSON document; both dialects store IDs as text
-- so a malformed ID from a client is simply "not found", never a type error.

CREATE TABLE accounts (
    id                TEXT PRIMARY KEY,
    name              TEXT NOT NULL,
    plan              TEXT NOT NULL DEFAULT 'standard',
    credit_balance    BIGINT NOT NULL DEFAULT 0 CHECK (credit_balance >= 0),
    credits_reserved  BIGINT NOT NULL DEFAULT 0 CHECK (credits_reserved >= 0),
    created_at        {{ts}} NOT NULL,
    updated_at        {{ts}} NOT NULL
);

CREATE TABLE installations (
    id                          TEXT PRIMARY KEY,
    account_id                  TEXT NOT NULL REFERENCES accounts(id),
    name                        TEXT NOT NULL,
    callback_url                TEXT NOT NULL DEFAULT '',
    webhook_secret_enc          TEXT NOT NULL,
    previous_webhook_secret_enc TEXT NOT NULL DEFAULT '',
    previous_secret_valid_until {{ts}},
    rate_limit_per_min          INTEGER NOT NULL DEFAULT 60,
    status                      TEXT NOT NULL DEFAULT 'active',
    created_at                  {{ts}} NOT NULL,
    updated_at                  {{ts}} NOT NULL
);
CREATE INDEX installations_account ON installations (account_id);

CREATE TABLE api_keys (
    id              TEXT PRIMARY KEY,
    kind            TEXT NOT NULL,
    account_id      TEXT NOT NULL REFERENCES accounts(id),
    installation_id TEXT REFERENCES installations(id),
    name            TEXT NOT NULL DEFAULT '',
    secret_hash     TEXT NOT NULL,
    scopes          TEXT NOT NULL,
    expires_at      {{ts}},
    revoked_at      {{ts}},
    last_used_at    {{ts}},
    created_at      {{ts}} NOT NULL
);
CREATE INDEX api_keys_account ON api_keys (account_id);
CREATE INDEX api_keys_installation ON api_keys (installation_id);

CREATE TABLE products (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts(id),
    installation_id TEXT REFERENCES installations(id),
    external_ref    TEXT NOT NULL,
    display_name    TEXT NOT NULL DEFAULT '',
    sku             TEXT NOT NULL DEFAULT '',
    created_at      {{ts}} NOT NULL,
    updated_at      {{ts}} NOT NULL,
    deleted_at      {{ts}}
);
CREATE UNIQUE INDEX products_live_ref ON products (installation_id, external_ref) WHERE deleted_at IS NULL;
CREATE INDEX products_account ON products (account_id, created_at);

CREATE TABLE assets (
    id                TEXT PRIMARY KEY,
    account_id        TEXT NOT NULL REFERENCES accounts(id),
    installation_id   TEXT REFERENCES installations(id),
    kind              TEXT NOT NULL,
    status            TEXT NOT NULL,
    filename          TEXT NOT NULL DEFAULT '',
    content_type      TEXT NOT NULL,
    size_bytes        BIGINT NOT NULL DEFAULT 0,
    blob_key          TEXT NOT NULL,
    width             INTEGER NOT NULL DEFAULT 0,
    height            INTEGER NOT NULL DEFAULT 0,
    sha256            TEXT NOT NULL DEFAULT '',
    job_id            TEXT,
    position          INTEGER NOT NULL DEFAULT 0,
    upload_expires_at {{ts}},
    purged_at         {{ts}},
    created_at        {{ts}} NOT NULL,
    updated_at        {{ts}} NOT NULL
);
CREATE INDEX assets_installation ON assets (installation_id, created_at);
CREATE INDEX assets_job ON assets (job_id);

CREATE TABLE packshots (
    id               TEXT PRIMARY KEY,
    account_id       TEXT NOT NULL REFERENCES accounts(id),
    installation_id  TEXT REFERENCES installations(id),
    product_id       TEXT NOT NULL REFERENCES products(id),
    asset_id         TEXT NOT NULL REFERENCES assets(id),
    external_ref     TEXT NOT NULL DEFAULT '',
    source_image_ref TEXT NOT NULL DEFAULT '',
    voting           TEXT NOT NULL DEFAULT 'pending',
    voting_at        {{ts}},
    job_id           TEXT,
    created_at       {{ts}} NOT NULL,
    deleted_at       {{ts}}
);
CREATE INDEX packshots_product ON packshots (product_id, voting, created_at);
CREATE INDEX packshots_installation ON packshots (installation_id, created_at);

CREATE TABLE orders (
    id                  TEXT PRIMARY KEY,
    account_id          TEXT NOT NULL REFERENCES accounts(id),
    installation_id     TEXT REFERENCES installations(id),
    api                 TEXT NOT NULL,
    job_type            TEXT NOT NULL,
    session_config      {{json}} NOT NULL,
    status              TEXT NOT NULL,
    jobs_total          INTEGER NOT NULL,
    jobs_completed      INTEGER NOT NULL DEFAULT 0,
    jobs_failed         INTEGER NOT NULL DEFAULT 0,
    jobs_cancelled      INTEGER NOT NULL DEFAULT 0,
    jobs_expired        INTEGER NOT NULL DEFAULT 0,
    credits_reserved    BIGINT NOT NULL DEFAULT 0,
    credits_consumed    BIGINT NOT NULL DEFAULT 0,
    credits_released    BIGINT NOT NULL DEFAULT 0,
    correlation_id      TEXT NOT NULL DEFAULT '',
    source_order_id     TEXT,
    workflow_started_at {{ts}},
    created_at          {{ts}} NOT NULL,
    updated_at          {{ts}} NOT NULL,
    completed_at        {{ts}}
);
CREATE INDEX orders_installation ON orders (installation_id, created_at);
CREATE INDEX orders_account ON orders (account_id, created_at);
CREATE INDEX orders_unstarted ON orders (created_at) WHERE workflow_started_at IS NULL;

CREATE TABLE jobs (
    id                TEXT PRIMARY KEY,
    order_id          TEXT NOT NULL REFERENCES orders(id),
    account_id        TEXT NOT NULL REFERENCES accounts(id),
    installation_id   TEXT REFERENCES installations(id),
    job_type          TEXT NOT NULL,
    position          INTEGER NOT NULL,
    product_id        TEXT REFERENCES products(id),
    product_ref       TEXT NOT NULL DEFAULT '',
    product_label     TEXT NOT NULL DEFAULT '',
    packshot_id       TEXT,
    input_asset_id    TEXT,
    ai_model          TEXT NOT NULL,
    aspect_ratio      TEXT NOT NULL,
    credit_cost       BIGINT NOT NULL,
    run               INTEGER NOT NULL DEFAULT 1,
    status            TEXT NOT NULL,
    attempt_count     INTEGER NOT NULL DEFAULT 0,
    error_category    TEXT,
    error_hint        TEXT,
    error_detail      TEXT NOT NULL DEFAULT '',
    voting            TEXT NOT NULL DEFAULT 'pending',
    voting_at         {{ts}},
    created_at        {{ts}} NOT NULL,
    updated_at        {{ts}} NOT NULL,
    started_at        {{ts}},
    completed_at      {{ts}}
);
CREATE INDEX jobs_order ON jobs (order_id, position);
CREATE INDEX jobs_installation_created ON jobs (installation_id, created_at, id);
CREATE INDEX jobs_account_status ON jobs (account_id, status);

CREATE TABLE credit_ledger (
    id             TEXT PRIMARY KEY,
    account_id     TEXT NOT NULL REFERENCES accounts(id),
    order_id       TEXT,
    job_id         TEXT,
    run            INTEGER NOT NULL DEFAULT 0,
    kind           TEXT NOT NULL,
    balance_delta  BIGINT NOT NULL,
    reserved_delta BIGINT NOT NULL,
    note           TEXT NOT NULL DEFAULT '',
    created_at     {{ts}} NOT NULL
);
CREATE INDEX credit_ledger_account ON credit_ledger (account_id, created_at);
CREATE INDEX credit_ledger_order ON credit_ledger (order_id);
-- One movement of each kind per job run: a retried or replayed activity can never charge twice.
CREATE UNIQUE INDEX credit_ledger_job_kind ON credit_ledger (job_id, run, kind) WHERE job_id IS NOT NULL;
-- A reservation is settled exactly once: consumed or released, never both.
CREATE UNIQUE INDEX credit_ledger_job_settlement ON credit_ledger (job_id, run) WHERE job_id IS NOT NULL AND kind IN ('consume', 'release');
