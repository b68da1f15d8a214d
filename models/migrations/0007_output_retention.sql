-- +goose Up
-- 0007: indexes for output retention (internal/retention) and packshot candidates of packshot jobs.
-- Template functions as in 0001 (none used here).

-- The retention sweep pages through output files that are still stored, oldest first; purged rows
-- leave the index, so each sweep reads only what it may purge.
CREATE INDEX assets_outputs_stored ON assets (created_at, id) WHERE kind = 'output' AND purged_at IS NULL;
-- A file a live packshot points at is never purged; the sweep checks that per file.
CREATE INDEX packshots_asset ON packshots (asset_id);
-- The packshot candidate of a packshot job, found when the job completes and when it is rated.
CREATE INDEX packshots_job ON packshots (job_id) WHERE job_id IS NOT NULL;
