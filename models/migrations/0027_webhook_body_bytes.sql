-- +goose Up
-- 0027: a webhook body is kept as the bytes it was written with. On PostgreSQL the payload columns
-- of webhook_events (0016) and webhook_deliveries (0002) were JSONB, which normalises a document:
-- it sorts the keys (shortest first) and writes ": " and ", ". Receivers then got bodies that did
-- not start with the documented event, delivery_id and delivery_created_at, the events API's data
-- was not the delivered body byte for byte, and the two databases sent different bytes. As TEXT
-- the column keeps what webhooks.encode wrote; bodies stored before keep their normalised bytes
-- (signatures are computed over the bytes sent, so they verify either way). SQLite kept TEXT all
-- along. Nothing queries inside a body.
{{if eq dialect "postgres"}}
ALTER TABLE webhook_events ALTER COLUMN payload TYPE TEXT;
ALTER TABLE webhook_deliveries ALTER COLUMN payload TYPE TEXT;
{{else}}
SELECT 1;
{{end}}
