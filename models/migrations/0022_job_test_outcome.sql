-- +goose Up
-- 0022: rehearsable outcomes (issue 26, point 4). A job of a test key's request may carry the
-- outcome its request asked for (test_outcome: {"fail_with", "retryable_failures", "delay_ms"}, as
-- JSON): the worker renders the job offline and makes its attempts fail, fail a number of times or
-- take their time as it says (docs/test-mode.md). NULL for every other job, live jobs always.
-- Template functions as in 0001: {{json}} a JSON document.
--
-- The column is added in place (ALTER TABLE ADD COLUMN on both databases), never by an SQLite
-- table rebuild, which would drop any trigger on jobs.
ALTER TABLE jobs ADD COLUMN test_outcome {{json}};
