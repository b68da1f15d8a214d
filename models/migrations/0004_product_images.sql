-- +goose Up
-- 0004: source images of catalog products (POST /images), and the index the catalog listings
-- (GET /products, GET /packshots) page through. Template functions as in 0001: {{ts}} timestamp with zone.

CREATE TABLE product_images (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts(id),
    installation_id TEXT REFERENCES installations(id),
    product_id      TEXT NOT NULL REFERENCES products(id),
    asset_id        TEXT NOT NULL REFERENCES assets(id),
    external_ref    TEXT NOT NULL,
    created_at      {{ts}} NOT NULL,
    deleted_at      {{ts}}
);
-- One live image per merchant reference and installation; a retired row frees the reference.
CREATE UNIQUE INDEX product_images_live_ref ON product_images (installation_id, external_ref) WHERE deleted_at IS NULL;
CREATE INDEX product_images_product ON product_images (product_id, created_at);

-- Keyset pagination of GET /products and GET /packshots: (created_at, id) within an installation.
CREATE INDEX products_installation_page ON products (installation_id, created_at, id);
CREATE INDEX packshots_installation_page ON packshots (installation_id, created_at, id);
