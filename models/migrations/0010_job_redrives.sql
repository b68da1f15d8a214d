-- +goose Up
-- 0010: support staff re-driving stranded jobs (`shotflow admin jobs redrive`): a job whose
-- workflow closed while its row is not terminal is settled (failed, credits released) or run again.
-- The audit trail of job_retries records both, told apart by action; one row per job, run and action.

ALTER TABLE job_retries ADD COLUMN action TEXT NOT NULL DEFAULT 'retry';
DROP INDEX job_retries_job_run;
CREATE UNIQUE INDEX job_retries_job_run ON job_retries (job_id, to_run, action);
