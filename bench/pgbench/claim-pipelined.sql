-- claim.sql with hoox's round-trip structure: pgbench pipelines (PG 14+)
-- send batch 1 (BEGIN, lock_timeout, lock, claim CTE), batch 2 (order,
-- trace, event, COMMIT) and the marker transaction as one round trip each,
-- like pgx batches do; the paper fill is one more. Four round trips per
-- signal, as in hoox, all on one connection. See claim.sql for the rest.
\set r random(1, 9000000000000000000)
\startpipeline
BEGIN;
SELECT set_config('lock_timeout', '2000ms', true);
SELECT pg_advisory_xact_lock(hashtextextended('k:' || 'pgb-' || CAST(:run AS text) || '-' || CAST(:client_id AS text) || '-' || CAST(:r AS text), 0))
WHERE NOT EXISTS (
    SELECT 1 FROM trace_ids
    WHERE trace_id = 'k:' || 'pgb-' || CAST(:run AS text) || '-' || CAST(:client_id AS text) || '-' || CAST(:r AS text) AND status IN ('dispatched', 'rejected', 'failed'));
WITH ks AS (
    SELECT coalesce((SELECT (value->>'engaged')::boolean FROM settings WHERE key = 'kill_switch'), false) AS engaged
), prior AS (
    SELECT t.trace_id, t.fingerprint, t.status, t.order_id, t.client_order_id, t.received_at
    FROM trace_ids t
    WHERE NULL::bigint IS NOT NULL AND t.key_source = 'window' AND t.fingerprint = md5('f' || CAST(:run AS text) || CAST(:client_id AS text) || CAST(:r AS text))
      AND t.received_at > now() - NULL::bigint * interval '1 millisecond'
    ORDER BY t.received_at DESC
    LIMIT 1
), ins AS (
    INSERT INTO trace_ids (trace_id, fingerprint, mode, key_source, status, exchange, symbol, action,
                           signal, source_ip, signal_time, received_at, updated_at, expires_at)
    SELECT 'k:' || 'pgb-' || CAST(:run AS text) || '-' || CAST(:client_id AS text) || '-' || CAST(:r AS text), md5('f' || CAST(:run AS text) || CAST(:client_id AS text) || CAST(:r AS text)), 'live', 'client', 'claimed',
           'paper', 'PGBENCH-' || CAST(:run AS text), 'buy',
           '{"action": "buy", "exchange": "paper", "order_type": "market", "quantity": "0.01", "side": "buy", "strategy": "bench", "symbol": "PGBENCH", "test": false}'::jsonb,
           '127.0.0.1'::inet, NULL::timestamptz, now(), now(), now() + 86400000::bigint * interval '1 millisecond'
    WHERE NOT (SELECT engaged FROM ks) AND NOT EXISTS (SELECT 1 FROM prior)
    ON CONFLICT (trace_id) DO NOTHING
    RETURNING trace_id, fingerprint, status, order_id, client_order_id, received_at
), ev AS (
    INSERT INTO trace_events (trace_id, event, source_ip, detail)
    SELECT trace_id, 'received', '127.0.0.1'::inet, jsonb_build_object('fingerprint', fingerprint, 'key_source', 'client') FROM ins
)
SELECT ks.engaged, r.claimed, r.trace_id, r.fingerprint, r.status, r.order_id, r.client_order_id, r.received_at,
       CASE WHEN r.claimed THEN (SELECT count(*) FROM orders o WHERE o.trace_id = r.trace_id) ELSE 0 END,
       CASE WHEN r.claimed THEN (SELECT count(*) FROM trace_events e
                                 WHERE e.trace_id = r.trace_id AND e.event = 'dispatch_started') ELSE 0 END
FROM ks LEFT JOIN LATERAL (
    SELECT true AS claimed, * FROM ins
    UNION ALL
    SELECT false, t.trace_id, t.fingerprint, t.status, t.order_id, t.client_order_id, t.received_at
    FROM trace_ids t WHERE t.trace_id = 'k:' || 'pgb-' || CAST(:run AS text) || '-' || CAST(:client_id AS text) || '-' || CAST(:r AS text) AND NOT EXISTS (SELECT 1 FROM ins)
    UNION ALL
    SELECT false, * FROM prior
    LIMIT 1
) r ON true;
\endpipeline
\startpipeline
INSERT INTO orders (id, trace_id, client_order_id, exchange, symbol, action, side, order_type, quantity, price,
                    leverage, mode, status, exchange_order_id, fill_price, reject_reason)
VALUES (gen_random_uuid(), 'k:' || 'pgb-' || CAST(:run AS text) || '-' || CAST(:client_id AS text) || '-' || CAST(:r AS text),
        'hx' || substr(md5('k:' || 'pgb-' || CAST(:run AS text) || '-' || CAST(:client_id AS text) || '-' || CAST(:r AS text)), 1, 30),
        'paper', 'PGBENCH-' || CAST(:run AS text), 'buy', NULLIF('buy', ''), 'market', 0.01, NULL, NULL, 'live', 'filled',
        'paper-' || gen_random_uuid(), 100, NULL)
RETURNING created_at;
UPDATE trace_ids SET status = 'dispatched', order_id = gen_random_uuid(),
       client_order_id = 'hx' || substr(md5('k:' || 'pgb-' || CAST(:run AS text) || '-' || CAST(:client_id AS text) || '-' || CAST(:r AS text)), 1, 30), updated_at = now()
WHERE trace_id = 'k:' || 'pgb-' || CAST(:run AS text) || '-' || CAST(:client_id AS text) || '-' || CAST(:r AS text);
INSERT INTO trace_events (trace_id, event, source_ip, detail)
VALUES ('k:' || 'pgb-' || CAST(:run AS text) || '-' || CAST(:client_id AS text) || '-' || CAST(:r AS text), 'dispatched', '127.0.0.1'::inet,
        coalesce(jsonb_build_object('order_id', gen_random_uuid(), 'client_order_id', 'hx', 'order_status', 'filled'), '{}'::jsonb));
COMMIT;
\endpipeline
\startpipeline
BEGIN;
SELECT set_config('synchronous_commit', 'off', true);
INSERT INTO trace_events (trace_id, event, source_ip, detail)
VALUES ('k:' || 'pgb-' || CAST(:run AS text) || '-' || CAST(:client_id AS text) || '-' || CAST(:r AS text), 'dispatch_started', '127.0.0.1'::inet,
        coalesce(jsonb_build_object('client_order_id', 'hx' || substr(md5('k:' || 'pgb-' || CAST(:run AS text) || '-' || CAST(:client_id AS text) || '-' || CAST(:r AS text)), 1, 30)), '{}'::jsonb));
COMMIT;
\endpipeline
INSERT INTO paper_orders (client_order_id, exchange_order_id, symbol, side, order_type,
                          quantity, price, fill_price, status, test)
VALUES ('hx' || substr(md5('k:' || 'pgb-' || CAST(:run AS text) || '-' || CAST(:client_id AS text) || '-' || CAST(:r AS text)), 1, 30), 'paper-' || gen_random_uuid(),
        'PGBENCH-' || CAST(:run AS text), 'buy', 'market', 0.01, NULL, 100, 'filled', false)
ON CONFLICT (client_order_id) DO NOTHING
RETURNING exchange_order_id;
