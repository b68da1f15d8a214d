-- +goose Up
-- 0009: the records of the external content API (external-content-api.md).
-- Template functions as in 0001.
--
-- A generation request of the external API answers the IDs of the records it creates at once,
-- before any job ran. Fashion models and sceneries are inserted as INPROGRESS rows right away;
-- a packshot row needs its image, so the job carries the ID its packshot will get (record_id) and
-- the packshot is inserted under that ID when the job completes. Photo-shoot images, videos and
-- reels are the jobs themselves: their record ID is the job ID and record_id stays NULL.
ALTER TABLE jobs ADD COLUMN record_id TEXT;
CREATE INDEX jobs_record ON jobs (record_id) WHERE record_id IS NOT NULL;

-- The product photo a packshot was cut from: a photo shoot of that photo uses its own accepted
-- packshot, never one of another photo of the same product. archived_at: archived through
-- POST /api/external/packshots/update-packshot; an archived packshot is neither listed nor used.
ALTER TABLE packshots ADD COLUMN source_image_id TEXT REFERENCES product_images(id);
ALTER TABLE packshots ADD COLUMN archived_at {{ts}};
CREATE INDEX packshots_source_image ON packshots (source_image_id, voting) WHERE source_image_id IS NOT NULL;
CREATE INDEX packshots_account ON packshots (account_id, created_at);

-- Existing packshots: the photo a packshot job read, else the live image named by source_image_ref.
UPDATE packshots SET source_image_id = (
    SELECT pi.id FROM product_images pi JOIN jobs j ON j.input_asset_id = pi.asset_id
    WHERE j.id = packshots.job_id AND pi.account_id = packshots.account_id
    ORDER BY pi.created_at DESC LIMIT 1)
WHERE job_id IS NOT NULL;
UPDATE packshots SET source_image_id = (
    SELECT pi.id FROM product_images pi
    WHERE pi.installation_id = packshots.installation_id AND pi.external_ref = packshots.source_image_ref
      AND pi.deleted_at IS NULL
    ORDER BY pi.created_at DESC LIMIT 1)
WHERE source_image_id IS NULL AND source_image_ref <> '';

-- The external API lists an account's product photos, generated images and videos newest first.
CREATE INDEX product_images_account ON product_images (account_id, created_at);
CREATE INDEX jobs_account_type ON jobs (account_id, job_type, created_at);
