-- +goose Up
-- 0015: a job cancelled by the API (DELETE /jobs/{id}) is decided in the database, outside any
-- workflow, and its job.cancelled delivery is recorded in the same transaction. The API starts
-- the delivery's workflow right after the commit; start_due_at, set in that transaction and
-- cleared once the start is recorded, is the outbox the worker's sweeper starts it from when that
-- start was lost (Temporal unreachable, the API stopped). Deliveries a workflow records and starts
-- itself never set it. Template functions as in 0001: {{ts}} timestamp with zone.
ALTER TABLE webhook_deliveries ADD COLUMN start_due_at {{ts}};
CREATE INDEX webhook_deliveries_start_due ON webhook_deliveries (start_due_at) WHERE start_due_at IS NOT NULL;
