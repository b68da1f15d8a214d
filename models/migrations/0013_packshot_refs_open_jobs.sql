-- +goose Up
-- 0013: one live packshot per merchant reference, and the index the straggler sweep pages through
-- (issue 23, items 2 and 12).

-- POST /packshots answers a repeated external_ref with the existing packshot, but nothing in the
-- schema made the reference unique: simultaneous registrations of one reference each found none
-- and each inserted a row. Like products_live_ref and product_images_live_ref, the index covers
-- the live rows only: DELETE /packshots/{id} (deleted_at) frees the reference. Archiving through the
-- external API does not: an archived packshot stays in the installation's catalog (listed, found
-- and deleted by its reference), so its reference stays taken. Packshots without a reference (''),
-- among them every packshot a job produced, never collide.
--
-- A database the race already hit holds several live packshots with one reference; the index could
-- not be built over them. Every one of them stays live, with its voting and file, so a client that
-- kept any of their IDs still finds it; the newest keeps the reference (the one GET and DELETE
-- /packshots/{ref} already chose) and the older ones lose it (external_ref ''), as if they had been
-- registered without one.
UPDATE packshots SET external_ref = ''
WHERE deleted_at IS NULL AND external_ref <> '' AND EXISTS (
    SELECT 1 FROM packshots newer
    WHERE newer.installation_id = packshots.installation_id AND newer.external_ref = packshots.external_ref
      AND newer.deleted_at IS NULL
      AND (newer.created_at > packshots.created_at OR (newer.created_at = packshots.created_at AND newer.id > packshots.id)));
CREATE UNIQUE INDEX packshots_live_ref ON packshots (installation_id, external_ref) WHERE deleted_at IS NULL AND external_ref <> '';


-- The straggler sweep (Support.FindStragglers) pages through the jobs that have not ended by
-- (updated_at, id) with a cursor, so that a backlog of healthy jobs cannot hide a stranded one
-- behind it. jobs_status_updated (status, updated_at) cannot give three statuses in one
-- (updated_at, id) order, so every page would read and sort the whole backlog; this index holds only
-- the jobs that have not ended (a job leaves it when it ends) and serves each page in order. Its
-- WHERE clause is the query's (models.StaleOpenJobs), as SQLite needs to use it.
CREATE INDEX jobs_open_updated ON jobs (updated_at, id) WHERE status IN ('pending', 'in_progress', 'retry_pending');
