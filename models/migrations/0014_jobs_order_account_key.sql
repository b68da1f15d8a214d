-- +goose Up
-- 0014: a job's order and account are one foreign key, jobs (order_id, account_id) → orders (id,
-- account_id), instead of three: order_id → orders, account_id → accounts and installation_id →
-- installations (issue 23, item 20). The separate keys repeated what the order's own keys check
-- (10 checks per five-job session beyond the order's) and did not catch a job of another account
-- than its order's; the composite key does, and makes the job's account valid through its order's
-- (orders.account_id → accounts). The installation of a job is its order's, set by the same
-- engine code (orders.installation_id → installations still holds). The key needs a unique index
-- on orders (id, account_id).
CREATE UNIQUE INDEX orders_id_account ON orders (id, account_id);
{{if eq dialect "postgres"}}
ALTER TABLE jobs
    DROP CONSTRAINT jobs_order_id_fkey,
    DROP CONSTRAINT jobs_account_id_fkey,
    DROP CONSTRAINT jobs_installation_id_fkey,
    ADD CONSTRAINT jobs_order_account_fkey FOREIGN KEY (order_id, account_id) REFERENCES orders (id, account_id);
{{else}}
-- SQLite changes a table's foreign keys only by rebuilding it. foreign_keys cannot be switched off
-- inside the migration's transaction, so the keys are deferred to its commit instead: dropping
-- jobs leaves the rows of the tables that reference it (webhook_deliveries, job_retries, …)
-- without their job for a moment, and copying the jobs back gives it back to them. The copy keeps
-- every value as it was stored; the columns are in the order the earlier migrations left them.
PRAGMA defer_foreign_keys = ON;
CREATE TEMP TABLE jobs_0014 AS SELECT * FROM jobs;
DROP TABLE jobs;
CREATE TABLE jobs (
    id                TEXT PRIMARY KEY,
    order_id          TEXT NOT NULL,
    account_id        TEXT NOT NULL,
    installation_id   TEXT,
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
    completed_at      {{ts}},
    run_started_at    {{ts}},
    input_asset_ids   {{json}},
    prompt            TEXT NOT NULL DEFAULT '',
    record_id         TEXT,
    CONSTRAINT jobs_order_account_fkey FOREIGN KEY (order_id, account_id) REFERENCES orders (id, account_id)
);
INSERT INTO jobs (id, order_id, account_id, installation_id, job_type, position, product_id, product_ref,
    product_label, packshot_id, input_asset_id, ai_model, aspect_ratio, credit_cost, run, status,
    attempt_count, error_category, error_hint, error_detail, voting, voting_at, created_at, updated_at,
    started_at, completed_at, run_started_at, input_asset_ids, prompt, record_id)
SELECT id, order_id, account_id, installation_id, job_type, position, product_id, product_ref,
    product_label, packshot_id, input_asset_id, ai_model, aspect_ratio, credit_cost, run, status,
    attempt_count, error_category, error_hint, error_detail, voting, voting_at, created_at, updated_at,
    started_at, completed_at, run_started_at, input_asset_ids, prompt, record_id
FROM jobs_0014;
DROP TABLE jobs_0014;
CREATE INDEX jobs_order ON jobs (order_id, position);
CREATE INDEX jobs_installation_created ON jobs (installation_id, created_at, id);
CREATE INDEX jobs_unstarted_runs ON jobs (updated_at) WHERE run_started_at IS NULL AND run > 1;
CREATE INDEX jobs_status_updated ON jobs (status, updated_at);
CREATE INDEX jobs_record ON jobs (record_id) WHERE record_id IS NOT NULL;
CREATE INDEX jobs_account_type ON jobs (account_id, job_type, created_at);
CREATE INDEX jobs_open_updated ON jobs (updated_at, id) WHERE status IN ('pending', 'in_progress', 'retry_pending');
{{end}}
