-- +goose Up
-- 0021: test mode (issue 26). A test key (pk_test_…, mk_test_…) belongs to a test twin of the
-- tenant it was made for: a plugin installation's twin is another installation, on an account of
-- its own (its test credits are per installation); an account's twin (for the external API) is
-- another account. Every record a test key creates is then its twin's, so the scoping every query
-- already has (installation_id, account_id) keeps the two worlds apart: a live key never sees a
-- test record and a test key never sees a live one. test_mode marks the twins, their keys, and the
-- orders and jobs they create, so that workers, webhooks and metrics tell them apart without a
-- join. Live rows keep test_mode FALSE, the default.
ALTER TABLE accounts ADD COLUMN test_mode BOOLEAN NOT NULL DEFAULT FALSE;
-- The live account whose external test twin this account is.
ALTER TABLE accounts ADD COLUMN test_of_account_id TEXT REFERENCES accounts(id);
-- The live installation whose plugin test twin's account this is.
ALTER TABLE accounts ADD COLUMN test_of_installation_id TEXT REFERENCES installations(id);
-- The UTC day (YYYY-MM-DD) the twin's test credits were last refilled to the day's allowance,
-- and how many jobs it has run that day (the test quota).
ALTER TABLE accounts ADD COLUMN test_day TEXT NOT NULL DEFAULT '';
ALTER TABLE accounts ADD COLUMN test_jobs_today INTEGER NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX accounts_test_of_account ON accounts (test_of_account_id) WHERE test_of_account_id IS NOT NULL;
CREATE UNIQUE INDEX accounts_test_of_installation ON accounts (test_of_installation_id) WHERE test_of_installation_id IS NOT NULL;

ALTER TABLE installations ADD COLUMN test_mode BOOLEAN NOT NULL DEFAULT FALSE;
-- The live installation whose test twin this installation is.
ALTER TABLE installations ADD COLUMN test_of_installation_id TEXT REFERENCES installations(id);
CREATE UNIQUE INDEX installations_test_of ON installations (test_of_installation_id) WHERE test_of_installation_id IS NOT NULL;

ALTER TABLE api_keys ADD COLUMN test_mode BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE orders ADD COLUMN test_mode BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE jobs ADD COLUMN test_mode BOOLEAN NOT NULL DEFAULT FALSE;
