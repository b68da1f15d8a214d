-- +goose Up
-- +goose NO TRANSACTION
-- 0031: the external API's record lists with a filter walk an index of the records the filter keeps.
-- 0029 gave each list an index in its order under the account; a filter (`approved`, and
-- /image-picker's `photo`) was then applied while walking it, so a page read every record the
-- filter left out between its own rows: a page of an account with 100,000 packshots of which ten
-- are approved read all 100,000. Each filter now has an index of its own records in the list's
-- order, and its query writes the index's condition out (a literal, as SQLite needs to use a
-- partial index; models/record_store.go).
--
-- On PostgreSQL the indexes are built CONCURRENTLY, so the tables take writes while they are built
-- (0029 and 0030 held them); that cannot run in a transaction, so this migration runs outside one
-- (NO TRANSACTION). A build that fails (or a process killed during one) leaves its index invalid and
-- the migration unrecorded: each index is dropped first, so the next `shotflow migrate` builds it
-- again. Template functions as in 0001; {{concurrently}} is empty on SQLite.

-- GET /models and /sceneries with `approved`: the items not archived and approved.
DROP INDEX {{concurrently}} IF EXISTS fashion_models_account_approved_page;
CREATE INDEX {{concurrently}} fashion_models_account_approved_page ON fashion_models (account_id, created_at, id) WHERE status <> 'ARCHIVED' AND voting = 'APPROVED';
DROP INDEX {{concurrently}} IF EXISTS sceneries_account_approved_page;
CREATE INDEX {{concurrently}} sceneries_account_approved_page ON sceneries (account_id, created_at, id) WHERE status <> 'ARCHIVED' AND voting = 'APPROVED';

-- GET /packshots with `approved`: the packshots neither deleted nor archived, and accepted (the
-- packshot jobs still making theirs are not listed then).
DROP INDEX {{concurrently}} IF EXISTS packshots_account_approved_page;
CREATE INDEX {{concurrently}} packshots_account_approved_page ON packshots (account_id, record_created_at, id) WHERE deleted_at IS NULL AND archived_at IS NULL AND voting = 'accepted';

-- GET /image-picker with `approved`: the accepted photo-shoot images. The job type is a column of
-- the index, not its condition, as the photo's index below: SQLite's planner, which has no
-- statistics, prefers the index with more columns the query fixes (jobs_account_type's otherwise).
DROP INDEX {{concurrently}} IF EXISTS jobs_account_shoots_approved_page;
CREATE INDEX {{concurrently}} jobs_account_shoots_approved_page ON jobs (account_id, job_type, created_at, id) WHERE voting = 'accepted';

-- GET /image-picker with `photo`: the shoots of the packshots cut from one product photo, found
-- from the photo's packshots (packshots_source_image, 0009) by their packshot, each packshot's
-- newest first; the page then orders the photo's shoots, not the account's.
DROP INDEX {{concurrently}} IF EXISTS jobs_packshot_shoots;
CREATE INDEX {{concurrently}} jobs_packshot_shoots ON jobs (account_id, job_type, packshot_id, created_at, id) WHERE packshot_id IS NOT NULL;
