-- +goose Up
-- 0011: every mutating route of the plugin API honours Idempotency-Key, not only POST /jobs and
-- clone (api/plugin/idempotency.go). Their answers are not all JSON sessions: a delete answers 204
-- without a body, rotate-hmac sends Cache-Control: no-store. So a completed row also keeps the
-- headers the route set, replayed with the status and body.
--
-- response_headers: a JSON object of header name to list of values, as encoding/json writes a Go
-- http.Header (TEXT, like response_body, so it is replayed as written). NULL on the rows of
-- POST /jobs and clone completed before 0011: their answer is a JSON session.
-- order_id stays NULL for a route that creates no order.

ALTER TABLE idempotency_keys ADD COLUMN response_headers TEXT;
