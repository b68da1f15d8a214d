-- +goose Up
-- 0006: reference data shared by both APIs: AI fashion models (mannequins), sceneries and presets.
-- Template functions as in 0001: {{ts}} timestamp with zone, {{json}} JSON document.
--
-- A row with account_id NULL belongs to the shared marketplace (models, sceneries) or is a system
-- preset; a row with an account_id belongs to that account alone. The marketplace and the system
-- presets are seeded from models/seed/reference.json (models.SeedReference) under fixed IDs.

-- fashion_models and sceneries have the same shape. status: DONE (usable), INPROGRESS (still being
-- generated, thumbnail not yet set), FAILED, ARCHIVED. voting: APPROVED, REJECTED or NULL (not
-- rated). The plugin API lists DONE rows that are not REJECTED. A thumbnail is either a file of the
-- blob store (thumbnail_key, used by seeded rows) or an asset (thumbnail_asset_id, for rows a
-- generation job produced); order_id and job_id link a generated row to its order and job.
CREATE TABLE fashion_models (
    id                 TEXT PRIMARY KEY,
    account_id         TEXT REFERENCES accounts(id),
    name               TEXT NOT NULL,
    preferences        TEXT NOT NULL DEFAULT '',
    status             TEXT NOT NULL CHECK (status IN ('DONE', 'INPROGRESS', 'FAILED', 'ARCHIVED')),
    voting             TEXT CHECK (voting IN ('APPROVED', 'REJECTED')),
    voting_at          {{ts}},
    thumbnail_key      TEXT NOT NULL DEFAULT '',
    thumbnail_asset_id TEXT REFERENCES assets(id),
    order_id           TEXT REFERENCES orders(id),
    job_id             TEXT REFERENCES jobs(id),
    created_at         {{ts}} NOT NULL,
    updated_at         {{ts}} NOT NULL
);
CREATE INDEX fashion_models_account ON fashion_models (account_id, status, created_at);
CREATE INDEX fashion_models_job ON fashion_models (job_id) WHERE job_id IS NOT NULL;

CREATE TABLE sceneries (
    id                 TEXT PRIMARY KEY,
    account_id         TEXT REFERENCES accounts(id),
    name               TEXT NOT NULL,
    preferences        TEXT NOT NULL DEFAULT '',
    status             TEXT NOT NULL CHECK (status IN ('DONE', 'INPROGRESS', 'FAILED', 'ARCHIVED')),
    voting             TEXT CHECK (voting IN ('APPROVED', 'REJECTED')),
    voting_at          {{ts}},
    thumbnail_key      TEXT NOT NULL DEFAULT '',
    thumbnail_asset_id TEXT REFERENCES assets(id),
    order_id           TEXT REFERENCES orders(id),
    job_id             TEXT REFERENCES jobs(id),
    created_at         {{ts}} NOT NULL,
    updated_at         {{ts}} NOT NULL
);
CREATE INDEX sceneries_account ON sceneries (account_id, status, created_at);
CREATE INDEX sceneries_job ON sceneries (job_id) WHERE job_id IS NOT NULL;

-- Presets: the item of the external content API's /presets, also listed by the plugin API.
-- type SYSTEM (account_id NULL, seeded) or USER (account_id set); status published, draft or
-- archived; visibility public (everyone) or private (the owning account). Text fields are '' when
-- unset; categories and tags are JSON arrays of strings. scenery_requirement is 'required',
-- 'recommended' or NULL (not yet reviewed: unknown, never "not needed"). credit_cost is the
-- preset's surcharge per generated image on top of the AI model's price; is_free is true exactly
-- when it is 0.
CREATE TABLE presets (
    id                  TEXT PRIMARY KEY,
    account_id          TEXT REFERENCES accounts(id),
    type                TEXT NOT NULL CHECK (type IN ('SYSTEM', 'USER')),
    status              TEXT NOT NULL CHECK (status IN ('published', 'draft', 'archived')),
    visibility          TEXT NOT NULL CHECK (visibility IN ('public', 'private')),
    slug                TEXT NOT NULL DEFAULT '',
    name                TEXT NOT NULL,
    quantity_guidelines TEXT NOT NULL DEFAULT '',
    quality_guidelines  TEXT NOT NULL DEFAULT '',
    best_for            TEXT NOT NULL DEFAULT '',
    do_tips             TEXT NOT NULL DEFAULT '',
    dont_tips           TEXT NOT NULL DEFAULT '',
    input_requirements  TEXT NOT NULL DEFAULT '',
    hero_intro          TEXT NOT NULL DEFAULT '',
    categories          {{json}} NOT NULL,
    tags                {{json}} NOT NULL,
    is_free             BOOLEAN NOT NULL DEFAULT FALSE,
    credit_cost         BIGINT NOT NULL DEFAULT 0 CHECK (credit_cost >= 0),
    scenery_requirement TEXT CHECK (scenery_requirement IN ('required', 'recommended')),
    position            INTEGER NOT NULL DEFAULT 0,
    created_at          {{ts}} NOT NULL,
    updated_at          {{ts}} NOT NULL,
    CHECK ((type = 'SYSTEM' AND account_id IS NULL) OR (type = 'USER' AND account_id IS NOT NULL))
);
-- A slug names one system preset, or one preset within an account.
CREATE UNIQUE INDEX presets_slug ON presets (COALESCE(account_id, ''), slug) WHERE slug <> '';
CREATE INDEX presets_account ON presets (account_id, status, created_at);

-- The cover (role cover, position 0) and the gallery (role gallery, positions 0-5: at most six
-- images) of a preset; like thumbnails, a blob-store file or an asset.
CREATE TABLE preset_images (
    id         TEXT PRIMARY KEY,
    preset_id  TEXT NOT NULL REFERENCES presets(id),
    role       TEXT NOT NULL CHECK (role IN ('cover', 'gallery')),
    position   INTEGER NOT NULL CHECK (position >= 0 AND position < 6),
    blob_key   TEXT NOT NULL DEFAULT '',
    asset_id   TEXT REFERENCES assets(id),
    created_at {{ts}} NOT NULL,
    CHECK (role = 'gallery' OR position = 0),
    CHECK (blob_key <> '' OR asset_id IS NOT NULL)
);
CREATE UNIQUE INDEX preset_images_slot ON preset_images (preset_id, role, position);
