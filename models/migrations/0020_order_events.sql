-- +goose Up
-- 0020: the change feed of orders (issue 25): `Prefer: wait` and the event stream of an order
-- (GET /orders/{id}/events) learn of every change of its jobs from here, in any API process,
-- whichever worker made the change.
--
-- Every change of a job's status, attempt or run, and the end of its order, is one row of
-- order_events, numbered per order (seq 1, 2, ...) in the order the changes commit: the triggers
-- below take the next number from orders.event_seq with an UPDATE, which holds the order's row
-- lock until the change commits, so a change that commits later always has a higher number and a
-- reader that has seen number n has seen every number below it. That makes seq the stream's event
-- id: a client that resumes after n (Last-Event-ID) gets every later change exactly once.
--
-- Triggers, not the application, write the feed: no code path that changes a job can forget it,
-- and the acceptance and the job's own statements stay as many as they were. The API processes
-- poll orders.event_seq of the orders their clients wait on (engine.OrderWatch): one indexed read
-- per interval per process, whatever the number of clients, and none when nobody waits.
-- (PostgreSQL's NOTIFY was not chosen: it takes a database-wide lock at every commit that
-- notifies, and every job change would notify whether anyone listens or not.)
ALTER TABLE orders ADD COLUMN event_seq BIGINT NOT NULL DEFAULT 0;

CREATE TABLE order_events (
{{if eq dialect "postgres"}}
    id       BIGSERIAL PRIMARY KEY,
{{else}}
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
{{end}}
    order_id TEXT NOT NULL,
    seq      BIGINT NOT NULL,
    -- NULL for the order's own event (order.completed).
    job_id   TEXT,
    -- job.queued (a re-run), job.started (an attempt began), job.retrying, job.completed,
    -- job.failed, job.cancelled, job.expired, order.completed.
    type     TEXT NOT NULL
);
CREATE UNIQUE INDEX order_events_order_seq ON order_events (order_id, seq);

-- The orders of before: each job that has left pending is one event of its current status, in the
-- order of the jobs, and an order that has ended has its order.completed after them, so that their
-- streams answer what a stream of today's orders would.
INSERT INTO order_events (order_id, seq, job_id, type)
SELECT order_id, ROW_NUMBER() OVER (PARTITION BY order_id ORDER BY position, id), id,
       CASE status
           WHEN 'in_progress' THEN 'job.started'
           WHEN 'retry_pending' THEN 'job.retrying'
           ELSE 'job.' || status
       END
FROM jobs WHERE status <> 'pending';
INSERT INTO order_events (order_id, seq, job_id, type)
SELECT o.id, 1 + (SELECT COUNT(*) FROM order_events e WHERE e.order_id = o.id), NULL, 'order.completed'
FROM orders o WHERE o.status <> 'in_progress';
UPDATE orders SET event_seq = (SELECT MAX(seq) FROM order_events e WHERE e.order_id = orders.id)
WHERE id IN (SELECT order_id FROM order_events);

{{if eq dialect "postgres"}}
-- +goose StatementBegin
CREATE FUNCTION shotflow_job_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    next_seq BIGINT;
BEGIN
    UPDATE orders SET event_seq = event_seq + 1 WHERE id = NEW.order_id RETURNING event_seq INTO next_seq;
    INSERT INTO order_events (order_id, seq, job_id, type) VALUES (NEW.order_id, next_seq, NEW.id,
        CASE NEW.status
            WHEN 'pending' THEN 'job.queued'
            WHEN 'in_progress' THEN 'job.started'
            WHEN 'retry_pending' THEN 'job.retrying'
            ELSE 'job.' || NEW.status
        END);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER jobs_order_events AFTER UPDATE ON jobs FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.attempt_count IS DISTINCT FROM NEW.attempt_count
          OR OLD.run IS DISTINCT FROM NEW.run)
    EXECUTE FUNCTION shotflow_job_event();

-- +goose StatementBegin
CREATE FUNCTION shotflow_order_end_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.event_seq := OLD.event_seq + 1;
    INSERT INTO order_events (order_id, seq, job_id, type) VALUES (NEW.id, NEW.event_seq, NULL, 'order.completed');
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER orders_order_events BEFORE UPDATE ON orders FOR EACH ROW
    WHEN (OLD.status = 'in_progress' AND NEW.status <> 'in_progress')
    EXECUTE FUNCTION shotflow_order_end_event();
{{else}}
-- +goose StatementBegin
CREATE TRIGGER jobs_order_events AFTER UPDATE OF status, attempt_count, run ON jobs FOR EACH ROW
    WHEN OLD.status IS NOT NEW.status OR OLD.attempt_count IS NOT NEW.attempt_count OR OLD.run IS NOT NEW.run
BEGIN
    UPDATE orders SET event_seq = event_seq + 1 WHERE id = NEW.order_id;
    INSERT INTO order_events (order_id, seq, job_id, type)
    SELECT NEW.order_id, event_seq, NEW.id,
           CASE NEW.status
               WHEN 'pending' THEN 'job.queued'
               WHEN 'in_progress' THEN 'job.started'
               WHEN 'retry_pending' THEN 'job.retrying'
               ELSE 'job.' || NEW.status
           END
    FROM orders WHERE id = NEW.order_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER orders_order_events AFTER UPDATE OF status ON orders FOR EACH ROW
    WHEN OLD.status = 'in_progress' AND NEW.status <> 'in_progress'
BEGIN
    UPDATE orders SET event_seq = event_seq + 1 WHERE id = NEW.id;
    INSERT INTO order_events (order_id, seq, job_id, type)
    SELECT NEW.id, event_seq, NULL, 'order.completed' FROM orders WHERE id = NEW.id;
END;
-- +goose StatementEnd
{{end}}
