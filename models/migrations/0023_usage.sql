-- +goose Up
-- 0023: usage (issue 27, point 1). GET /usage and GET /api/external/usage sum the credit ledger
-- over a time range (docs/api-guide.md, "Usage").
--
-- orders.api_key_id is the API key whose request created the order (the external API's usage
-- groups by it); NULL for orders of earlier versions, of support's re-runs' sources and of tests
-- that create orders without a key. No foreign key: keys are revoked, never deleted, and the
-- usage only groups by the ID.
--
-- A release entry's note says how its job run ended: failed, expired or cancelled (settle writes
-- it from this version on); the entries written before are filled in here from their jobs. A run
-- before the job's current one was re-run by support, which only re-runs failed and expired runs,
-- so its release counts as failed. Usage counts jobs_failed and jobs_cancelled from these notes,
-- the ledger alone.
--
-- The column is added in place (ALTER TABLE ADD COLUMN on both databases), never by an SQLite
-- table rebuild, which would drop the triggers on orders (0020).
ALTER TABLE orders ADD COLUMN api_key_id TEXT;
UPDATE credit_ledger SET note = COALESCE(
    (SELECT j.status FROM jobs j WHERE j.id = credit_ledger.job_id AND j.run = credit_ledger.run
        AND j.status IN ('failed', 'expired', 'cancelled')),
    'failed')
WHERE kind = 'release' AND note = '' AND job_id IS NOT NULL;
