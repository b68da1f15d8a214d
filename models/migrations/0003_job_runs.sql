-- +goose Up
-- 0003: support staff re-running failed or expired jobs (`shotflow admin jobs retry`): when the
-- workflow of a later run was started, an audit row per re-run, and an index for listing jobs by
-- status. Template functions as in 0001: {{ts}} timestamp with zone.

-- Set once the JobWorkflow of a run after the first has been started; NULL on a run > 1 means its
-- start is still owed, and the worker's sweeper starts it (the same outbox as orders).
ALTER TABLE jobs ADD COLUMN run_started_at {{ts}};
CREATE INDEX jobs_unstarted_runs ON jobs (updated_at) WHERE run_started_at IS NULL AND run > 1;
CREATE INDEX jobs_status_updated ON jobs (status, updated_at);

CREATE TABLE job_retries (
    id         TEXT PRIMARY KEY,
    job_id     TEXT NOT NULL REFERENCES jobs(id),
    order_id   TEXT NOT NULL REFERENCES orders(id),
    account_id TEXT NOT NULL REFERENCES accounts(id),
    from_run   INTEGER NOT NULL,
    to_run     INTEGER NOT NULL,
    actor      TEXT NOT NULL,
    reason     TEXT NOT NULL DEFAULT '',
    created_at {{ts}} NOT NULL
);
-- One re-run per (job, run): two operators retrying at once cannot both create run n+1.
CREATE UNIQUE INDEX job_retries_job_run ON job_retries (job_id, to_run);
CREATE INDEX job_retries_order ON job_retries (order_id, created_at);
