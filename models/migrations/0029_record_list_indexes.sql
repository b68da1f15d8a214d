-- +goose Up
-- 0029: an index in the order of each of the external API's record lists (GET /products,
-- /models, /sceneries, /packshots, /image-picker, /videos; models/record_store.go,
-- models/product_store.go). A list answers a page newest first by (created_at, id) under its
-- account, after a cursor: with an index in that order behind the account, a page reads its rows
-- from the cursor on and stops at the LIMIT; without one, PostgreSQL read and sorted every row of
-- the account for every page. Each index has the list's order in full (id last, for the ties), and
-- a partial index's WHERE clause is the list's, written out in its query, as SQLite needs to use it.
-- The indexes are built in the migration's transaction (not CONCURRENTLY): PostgreSQL holds the
-- writes to each table while its index is built, which on a large jobs table is worth a quiet hour.
-- Template functions as in 0001: {{ts}} timestamp with zone, {{dialect}} the database.
--
-- GET /packshots lists the account's packshots, each dated by the job that made it when one did,
-- beside its packshot jobs whose packshot does not exist yet (a UNION ALL). The date was
-- COALESCE(j.created_at, p.created_at) over a join, which no index holds: it is now the packshot's
-- own column record_created_at, the same COALESCE, which triggers write whenever a packshot is
-- inserted or its job_id or created_at changes (a job's created_at never changes), so that no
-- insert of either API, of support or of a test can leave it out or get it otherwise; the existing
-- packshots are filled in here, the job's created_at copied as it is stored. Each branch then walks
-- an index in the list's order and the query merges them under the LIMIT. The column is added in
-- place (ALTER TABLE ADD COLUMN on both databases), never by an SQLite table rebuild, which would
-- drop the triggers; PostgreSQL also refuses a packshot without it (SQLite cannot add NOT NULL in
-- place).
ALTER TABLE packshots ADD COLUMN record_created_at {{ts}};
UPDATE packshots SET record_created_at = COALESCE(
    (SELECT j.created_at FROM jobs j WHERE j.id = packshots.job_id),
    created_at);
{{if eq dialect "postgres"}}
ALTER TABLE packshots ALTER COLUMN record_created_at SET NOT NULL;
-- +goose StatementBegin
CREATE FUNCTION shotflow_packshot_record_created_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.record_created_at := COALESCE((SELECT j.created_at FROM jobs j WHERE j.id = NEW.job_id), NEW.created_at);
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER packshots_record_created_at BEFORE INSERT OR UPDATE OF job_id, created_at ON packshots FOR EACH ROW
    EXECUTE FUNCTION shotflow_packshot_record_created_at();
{{else}}
-- +goose StatementBegin
CREATE TRIGGER packshots_record_created_at_insert AFTER INSERT ON packshots FOR EACH ROW
BEGIN
    UPDATE packshots SET record_created_at = COALESCE((SELECT j.created_at FROM jobs j WHERE j.id = NEW.job_id), NEW.created_at)
    WHERE id = NEW.id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER packshots_record_created_at_update AFTER UPDATE OF job_id, created_at ON packshots FOR EACH ROW
BEGIN
    UPDATE packshots SET record_created_at = COALESCE((SELECT j.created_at FROM jobs j WHERE j.id = NEW.job_id), NEW.created_at)
    WHERE id = NEW.id;
END;
-- +goose StatementEnd
{{end}}
-- The packshots GET /packshots lists; packshots_account (account_id, created_at) had no other
-- reader.
CREATE INDEX packshots_account_page ON packshots (account_id, record_created_at, id) WHERE deleted_at IS NULL AND archived_at IS NULL;
DROP INDEX packshots_account;

-- The packshot jobs of GET /packshots, listed under their record_id (the ID their packshot will
-- get) while they have no packshot: those that do are walked past, one look-up of packshots'
-- primary key each.
CREATE INDEX jobs_packshot_records_page ON jobs (account_id, created_at, record_id) WHERE job_type = 'packshot' AND record_id IS NOT NULL AND record_archived_at IS NULL;

-- The photo-shoot images of GET /image-picker: the jobs of one type of the account. The index of
-- 0009 gains the id (its readers by account and type read it as before).
DROP INDEX jobs_account_type;
CREATE INDEX jobs_account_type ON jobs (account_id, job_type, created_at, id);

-- GET /videos lists two job types together, which an index by type cannot give in one order.
CREATE INDEX jobs_account_videos_page ON jobs (account_id, created_at, id) WHERE job_type IN ('video', 'reel');

-- GET /models and /sceneries: the account's items that are not archived. The index by status of
-- 0006 stays, for the plugin API's usable items (status DONE).
CREATE INDEX fashion_models_account_page ON fashion_models (account_id, created_at, id) WHERE status <> 'ARCHIVED';
CREATE INDEX sceneries_account_page ON sceneries (account_id, created_at, id) WHERE status <> 'ARCHIVED';

-- GET /products: the account's product photos; the index of 0009 was this one without the id.
DROP INDEX product_images_account;
CREATE INDEX product_images_account_page ON product_images (account_id, created_at, id);
