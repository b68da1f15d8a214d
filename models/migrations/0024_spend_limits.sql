-- +goose Up
-- 0024: monthly spend limits (issue 27, point 3). An account (the external API's tenant, and the
-- cap over every installation on it) and an installation (the plugin API's) may hold a limit of
-- credits per UTC calendar month; NULL is no limit. spend_used is what the month spend_month
-- (YYYY-MM) reserved, less what it released: the reservation's own UPDATE adds to it, and refuses
-- the order, when the limit is set and the sum would pass it; a new month starts it from zero in
-- that same UPDATE. spend_alert_percent is the client's alert threshold (spend_limit.alert).
ALTER TABLE accounts ADD COLUMN spend_limit_monthly BIGINT;
ALTER TABLE accounts ADD COLUMN spend_alert_percent INTEGER NOT NULL DEFAULT 80;
ALTER TABLE accounts ADD COLUMN spend_month TEXT NOT NULL DEFAULT '';
ALTER TABLE accounts ADD COLUMN spend_used BIGINT NOT NULL DEFAULT 0;
ALTER TABLE installations ADD COLUMN spend_limit_monthly BIGINT;
ALTER TABLE installations ADD COLUMN spend_alert_percent INTEGER NOT NULL DEFAULT 80;
ALTER TABLE installations ADD COLUMN spend_month TEXT NOT NULL DEFAULT '';
ALTER TABLE installations ADD COLUMN spend_used BIGINT NOT NULL DEFAULT 0;
-- External keys that carry the default scopes (content.register and content.read) also get
-- content.billing, the scope of the external API's /spend-limit routes, as every new external key
-- does (like 0017 did for content.webhooks); a key an operator narrowed stays as it was.
UPDATE api_keys SET scopes = scopes || ' content.billing'
WHERE kind = 'external'
  AND (' ' || scopes || ' ') LIKE '% content.register %'
  AND (' ' || scopes || ' ') LIKE '% content.read %'
  AND (' ' || scopes || ' ') NOT LIKE '% content.billing %';
