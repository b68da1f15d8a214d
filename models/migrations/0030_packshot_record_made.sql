-- +goose Up
-- 0030: a packshot job says in its own row when its packshot was made (record_made_at), so that
-- the index GET /packshots's jobs branch walks leaves such a job out. That branch lists the packshot
-- jobs whose packshot does not exist yet, under their record_id (models.packshotRecords); with 0029's
-- index it walked past every packshot job whose packshot existed, one probe of packshots' primary
-- key each: a page of an account whose packshot jobs had made their packshots read every one of
-- them older than its cursor. Now the index holds only the jobs without theirs, and a page reads
-- about its own rows.
--
-- record_made_at is set in the transaction that makes the packshot under the job's record ID, by
-- the statement that already reads the job's row there (models.EnsurePackshotCandidate: the job's
-- completion, or the rating of a job completed before candidates existed); no other path inserts a
-- packshot under a job's record ID, and no path deletes a packshot's row (the catalog deletes and
-- archives set a column; the record still exists). The list keeps its NOT EXISTS on packshots as
-- well, so it answers exactly what it did whatever a row says; record_made_at only narrows the
-- index. Added in place (ALTER TABLE ADD COLUMN on both databases), as 0026's record_archived_at.
-- Template functions as in 0001: {{ts}} timestamp with zone.
ALTER TABLE jobs ADD COLUMN record_made_at {{ts}};

-- The packshot jobs whose packshot exists: made when their packshot was created. This writes each
-- such job's row once, in the migration's transaction (a large jobs table is worth a quiet hour).
UPDATE jobs SET record_made_at = (SELECT p.created_at FROM packshots p WHERE p.id = jobs.record_id)
WHERE job_type = 'packshot' AND record_id IS NOT NULL AND EXISTS (SELECT 1 FROM packshots p WHERE p.id = jobs.record_id);

-- 0029's index without the jobs whose packshot was made.
DROP INDEX jobs_packshot_records_page;
CREATE INDEX jobs_packshot_records_page ON jobs (account_id, created_at, record_id)
    WHERE job_type = 'packshot' AND record_id IS NOT NULL AND record_archived_at IS NULL AND record_made_at IS NULL;
