-- +goose Up
-- 0018: the Cancel-After request header (issue 25, point 3). A job accepted with it carries its
-- start_deadline: a job whose first attempt has not begun by then is cancelled instead of started,
-- by BeginAttempt or by the worker's deadline sweep (docs/job-states.md). cancel_reason says why a
-- cancelled job was cancelled: 'requested' (DELETE /jobs/{id}, the external DELETE /orders/{id})
-- or 'deadline'; NULL for a job that was not cancelled. Template functions as in 0001: {{ts}}
-- timestamp with zone.
--
-- Both columns are added in place (ALTER TABLE ADD COLUMN on both databases), never by an SQLite
-- table rebuild, which would drop any trigger on jobs.
ALTER TABLE jobs ADD COLUMN start_deadline {{ts}};
ALTER TABLE jobs ADD COLUMN cancel_reason TEXT;

-- Every job cancelled before this migration was cancelled by a client's request: the API's
-- DELETE routes, or the cancel-job workflow Update of earlier releases. None had a deadline.
UPDATE jobs SET cancel_reason = 'requested' WHERE status = 'cancelled';

-- The deadline sweep (models.Store.JobsPastStartDeadline) reads the pending jobs with a deadline,
-- earliest first; a job leaves the index when it starts or ends. Its WHERE clause is the query's,
-- written out, as SQLite needs to use it.
CREATE INDEX jobs_pending_start_deadline ON jobs (start_deadline) WHERE status = 'pending' AND start_deadline IS NOT NULL;
