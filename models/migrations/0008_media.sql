-- +goose Up
-- 0008: media of issue 5: inputs prepared by PrepareInputWorkflow, multi-input jobs (reels) and the
-- free text of idea and video jobs.
-- Template functions as in 0001.

-- An upload is checked, oriented, upscaled and thumbnailed before it is ready; the prepared copy
-- and the thumbnail sit beside the original. problem says why an unreadable upload is invalid.
ALTER TABLE assets ADD COLUMN prepared_blob_key TEXT NOT NULL DEFAULT '';
ALTER TABLE assets ADD COLUMN thumbnail_blob_key TEXT NOT NULL DEFAULT '';
ALTER TABLE assets ADD COLUMN problem TEXT NOT NULL DEFAULT '';
-- Uploads still being prepared, found by the sweep that restarts a lost preparation.
CREATE INDEX assets_processing ON assets (updated_at) WHERE status = 'processing';

-- A reel's 1 to 10 input images in order (input_asset_id holds the first); NULL for one input.
ALTER TABLE jobs ADD COLUMN input_asset_ids {{json}};
-- The preferences of an idea job or the suggestion of a video job.
ALTER TABLE jobs ADD COLUMN prompt TEXT NOT NULL DEFAULT '';
