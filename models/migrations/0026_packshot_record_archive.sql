-- +goose Up
-- 0026: a packshot record of the external API may be archived in any state (the spec's state
-- table: "packshot record | any | update-packshot with status ARCHIVE"). A record still being made,
-- or whose job failed, has no packshots row yet (or ever): it is its job's record_id. Its archive
-- is kept on the job, record_archived_at, which GET /packshots reads to leave it out, and which the
-- packshot its job may still produce inherits (models.EnsurePackshotCandidate). Added in place, as
-- 0018, never by an SQLite table rebuild. Template functions as in 0001: {{ts}} timestamp with zone.
ALTER TABLE jobs ADD COLUMN record_archived_at {{ts}};
