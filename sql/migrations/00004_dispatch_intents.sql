-- +goose Up
-- dispatch_intents is the recovery protocol's durable intent: one row per
-- client order ID, committed before the first byte of its order goes to a
-- venue. An intent whose outcome is still NULL is an attempt that may have
-- reached the venue and was never recorded (hoox or Postgres died between
-- the venue's answer and the commit): the next attempt of the same signal
-- and the sweeper look it up at the venue before anything is placed again.
-- Intents are kept like orders (never purged): the number of settled
-- intents under a lock key is the execution number that seeds the next
-- client order ID.
CREATE TABLE dispatch_intents (
    client_order_id text        PRIMARY KEY,
    lock_key        text        NOT NULL,
    trace_id        text        NOT NULL,
    fingerprint     text        NOT NULL,
    mode            text        NOT NULL CHECK (mode IN ('live', 'test')),
    key_source      text        NOT NULL CHECK (key_source IN ('client', 'derived', 'window')),
    exchange        text        NOT NULL,
    symbol          text        NOT NULL,
    action          text        NOT NULL,
    order_spec      jsonb       NOT NULL,
    signal          jsonb       NOT NULL,
    source_ip       inet,
    signal_time     timestamptz,
    received_at     timestamptz NOT NULL,
    sent_at         timestamptz NOT NULL DEFAULT now(),
    attempts        integer     NOT NULL DEFAULT 1,
    outcome         text        CHECK (outcome IN ('dispatched', 'rejected', 'reconciling', 'unsent', 'not_placed', 'key_reused', 'failed')),
    settled_at      timestamptz
);
CREATE INDEX dispatch_intents_lock_key_idx ON dispatch_intents (lock_key);
CREATE INDEX dispatch_intents_unsettled_idx ON dispatch_intents (sent_at) WHERE outcome IS NULL;

-- Orders placed before intents existed count as settled executions, so the
-- next execution of their trace keeps getting a fresh client order ID.
INSERT INTO dispatch_intents (client_order_id, lock_key, trace_id, fingerprint, mode, key_source, exchange,
                              symbol, action, order_spec, signal, received_at, sent_at, outcome, settled_at)
SELECT o.client_order_id,
       CASE WHEN o.trace_id ~ '^(test:)?w:' THEN regexp_replace(o.trace_id, ':[0-9]+$', '') ELSE o.trace_id END,
       o.trace_id, coalesce(t.fingerprint, ''), o.mode,
       CASE WHEN o.trace_id ~ '^(test:)?w:' THEN 'window' WHEN o.trace_id ~ '^(test:)?d:' THEN 'derived' ELSE 'client' END,
       o.exchange, o.symbol, o.action, '{}', coalesce(t.signal, '{}'), coalesce(t.received_at, o.created_at),
       o.created_at, CASE WHEN o.status = 'rejected' THEN 'rejected' ELSE 'dispatched' END, o.created_at
FROM orders o LEFT JOIN trace_ids t ON t.trace_id = o.trace_id
ON CONFLICT (client_order_id) DO NOTHING;

-- +goose Down
DROP TABLE dispatch_intents;
