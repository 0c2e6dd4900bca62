-- +goose Up
-- Issue 21, the purge at scale: 70 % of a purge's WAL was its `purged`
-- audit rows in trace_events (305 bytes each, 185 of them a jsonb detail)
-- and their entries in trace_events_pkey, a large index that takes them at
-- random places and splits. A purged trace is now one narrow typed row in
-- trace_purges (about half the bytes, in small indexes of its own), and
-- the view trace_history presents trace_events and trace_purges as one
-- audit trail: a trace_purges row reads there exactly as the `purged`
-- event it replaces (same id sequence, same detail). Audit queries read
-- trace_history; trace_events keeps every other event.
CREATE TABLE trace_purges (
    id          bigint      NOT NULL DEFAULT nextval('trace_events_id_seq'),
    trace_id    text        NOT NULL,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    status      text        NOT NULL,
    order_id    uuid,
    received_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (id)
);
-- Lookups by trace ID are equality only, so a hash index serves them: 16
-- bytes an entry against a B-tree's ~100, and a purge's random trace IDs
-- dirty a sixth of the pages (the purge's writes, flushed by the kernel
-- later, are what stalls the signals' commits). id and at only grow.
CREATE INDEX trace_purges_trace_id_idx ON trace_purges USING hash (trace_id);
CREATE INDEX trace_purges_at_idx ON trace_purges (at);

-- The purged events written so far move over when they read back the same
-- (every one hoox wrote does); any other stays where it is, and the view
-- shows it all the same.
WITH moved AS (
    DELETE FROM trace_events
    WHERE event = 'purged'
      AND detail = jsonb_build_object('status', detail->>'status', 'order_id', (detail->>'order_id')::uuid,
                                      'received_at', (detail->>'received_at')::timestamptz,
                                      'expires_at', (detail->>'expires_at')::timestamptz)
      AND detail->>'status' IS NOT NULL AND detail->>'received_at' IS NOT NULL AND detail->>'expires_at' IS NOT NULL
    RETURNING id, trace_id, at, detail
)
INSERT INTO trace_purges (id, trace_id, at, status, order_id, received_at, expires_at)
SELECT id, trace_id, at, detail->>'status', (detail->>'order_id')::uuid,
       (detail->>'received_at')::timestamptz, (detail->>'expires_at')::timestamptz
FROM moved;

-- trace_history is the audit trail: every trace_events row, and each
-- purged trace as its `purged` event. A filter on trace_id or at reaches
-- both tables' indexes (the planner pushes it into each branch).
CREATE VIEW trace_history AS
SELECT id, trace_id, event, at, source_ip, detail FROM trace_events
UNION ALL
SELECT id, trace_id, 'purged'::text, at, NULL::inet,
       jsonb_build_object('status', status, 'order_id', order_id, 'received_at', received_at, 'expires_at', expires_at)
FROM trace_purges;

-- +goose Down
DROP VIEW trace_history;
INSERT INTO trace_events (id, trace_id, event, at, detail)
OVERRIDING SYSTEM VALUE
SELECT id, trace_id, 'purged', at,
       jsonb_build_object('status', status, 'order_id', order_id, 'received_at', received_at, 'expires_at', expires_at)
FROM trace_purges;
DROP TABLE trace_purges;
