-- +goose Up
-- 0025: alerts (issue 27, point 4). A client sets low_balance_threshold on its installation
-- (plugin API) or account (external API) with PUT /alerts; credits.low is sent when the account's
-- available balance first falls below it, once per crossing. spend_limit.alert is sent when a
-- month's spend first passes spend_alert_percent of the limit (0024), spend_limit.reached when a
-- request is first refused by the limit in a month (spend_reached_month; a new limit re-arms it).
--
-- Only a reservation lowers a balance and raises a spend, and its UPDATE holds the account's row,
-- so the reservation itself tells a crossing exactly (before and after are its own): the order's
-- statement writes one pending_alerts row per crossing, in the same statement, and the API that
-- committed it (or the worker's sweep, after a crash) turns each row into its webhook event and
-- deletes it in one transaction. accounts.low_balance_watch is the highest threshold of the account
-- and its installations, kept by PUT /alerts, so that an order of an account without one never
-- looks at its installations.
ALTER TABLE accounts ADD COLUMN low_balance_threshold BIGINT;
ALTER TABLE accounts ADD COLUMN low_balance_watch BIGINT;
ALTER TABLE accounts ADD COLUMN spend_reached_month TEXT NOT NULL DEFAULT '';
ALTER TABLE installations ADD COLUMN low_balance_threshold BIGINT;
ALTER TABLE installations ADD COLUMN spend_reached_month TEXT NOT NULL DEFAULT '';

CREATE TABLE pending_alerts (
{{if eq dialect "postgres"}}
    id              BIGSERIAL PRIMARY KEY,
{{else}}
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
{{end}}
    account_id      TEXT NOT NULL,
    -- NULL: the account's own alert (external API); else its installation's (plugin API).
    installation_id TEXT,
    -- credits.low or spend_limit.alert.
    event           TEXT NOT NULL,
    -- credits.low: the threshold passed and the available balance after the reservation.
    threshold       BIGINT,
    balance         BIGINT,
    -- spend_limit.alert: the limit, the percentage passed, the month's spend after the reservation.
    spend_limit     BIGINT,
    alert_percent   INTEGER,
    spend_used      BIGINT,
    month           TEXT NOT NULL DEFAULT '',
    created_at      {{ts}} NOT NULL
);
CREATE INDEX pending_alerts_account ON pending_alerts (account_id);
