-- +goose Up
-- 0012: jobs_account_status (account_id, status), created in 0001, serves no query: the account's
-- jobs are read by type (jobs_account_type, 0009), the support listing and the straggler sweep by
-- status and updated_at (jobs_status_updated, 0003), the plugin listing by installation
-- (jobs_installation_created). Every job's INSERT and every change of its status still wrote it:
-- five index entries per accepted five-image session, one more per status change of each job
-- (issue 15).
DROP INDEX IF EXISTS jobs_account_status;
