-- +goose Up
-- 0017: external keys that carry the default scopes (content.register and content.read) also get
-- content.webhooks, the scope of the webhook routes of issue 24, as every new external key does:
-- a team whose key was issued before those routes can manage its webhooks without a new key. A
-- key an operator narrowed (content.read alone, for example) stays as it was. Scopes are one
-- space-separated text; padding it with spaces matches whole names only.
UPDATE api_keys SET scopes = scopes || ' content.webhooks'
WHERE kind = 'external'
  AND (' ' || scopes || ' ') LIKE '% content.register %'
  AND (' ' || scopes || ' ') LIKE '% content.read %'
  AND (' ' || scopes || ' ') NOT LIKE '% content.webhooks %';
