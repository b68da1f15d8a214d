-- +goose Up
-- 0028: a webhook delivery knows its mode. test_mode is TRUE on the deliveries of a test twin's
-- endpoints (migration 0021: a delivery's account is a twin's, test_mode, exactly when its
-- installation is one), set when the event is recorded (Store.RecordEvents), so every start of its
-- WebhookDeliveryWorkflow (the first, the outbox sweep's, a replay, a recover) gives the workflow
-- its ShotflowLivemode search attribute from the row it already reads, without a join. An account
-- never changes mode, so the copy cannot go stale. Live deliveries keep FALSE, the default; those
-- recorded before for a twin are marked here.
ALTER TABLE webhook_deliveries ADD COLUMN test_mode BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE webhook_deliveries SET test_mode = TRUE WHERE account_id IN (SELECT id FROM accounts WHERE test_mode = TRUE);
