-- Audit queries for hoox operators. Run them with psql against the hoox
-- database; edit the literal examples ('k:demo-1', intervals) first. Every
-- query here is run against a seeded database by db/audit_queries_test.go,
-- so this file cannot drift from the schema.
--
-- The audit trail is the view trace_history: every trace_events row, and
-- each purged trace (a row in trace_purges) as its `purged` event.
-- Events: received, duplicate, key_reused, dispatch_started,
-- dispatched, rejected, reconciling, reconciled, failed, released, purged,
-- kill_switch_engaged, kill_switch_released, ledger_set, ledger_released
-- (on a sell's trace, when a ledger_set released it); for an order
-- followed to its end, order_partially_filled, order_filled,
-- order_cancelled, order_expired, order_rejected; for a cancel signal,
-- cancelled. Admin actions use trace IDs starting with 'admin:', which no
-- signal can produce.

-- name: Duplicates per day
SELECT date_trunc('day', at) AS day,
       count(*) FILTER (WHERE event = 'received')   AS received,
       count(*) FILTER (WHERE event = 'duplicate')  AS duplicates,
       count(*) FILTER (WHERE event = 'key_reused') AS key_reuses,
       round(count(*) FILTER (WHERE event IN ('duplicate', 'key_reused'))::numeric
             / nullif(count(*) FILTER (WHERE event IN ('received', 'duplicate', 'key_reused')), 0), 4) AS repeat_ratio
FROM trace_history
WHERE at > now() - interval '30 days'
GROUP BY 1
ORDER BY 1 DESC;

-- name: Every attempt of one trace, in time order
SELECT at, event, host(source_ip) AS source_ip, detail
FROM trace_history
WHERE trace_id = 'k:demo-1'
ORDER BY at, id;

-- name: Key reuse incidents (same client key, different signal)
SELECT e.at, e.trace_id, host(e.source_ip) AS source_ip,
       e.detail->>'fingerprint' AS reused_with_fingerprint,
       t.fingerprint            AS original_fingerprint,
       t.received_at            AS first_seen
FROM trace_history e
LEFT JOIN trace_ids t ON t.trace_id = e.trace_id
WHERE e.event = 'key_reused' AND e.at > now() - interval '7 days'
ORDER BY e.at DESC;

-- name: Orders per symbol and outcome
SELECT exchange, symbol, mode, status,
       count(*)        AS orders,
       sum(quantity)   AS quantity,
       sum(filled_quantity) AS filled_quantity, -- what executed (null before migration 6)
       min(created_at) AS first_order,
       max(created_at) AS last_order
FROM orders
WHERE created_at > now() - interval '7 days'
GROUP BY exchange, symbol, mode, status
ORDER BY exchange, symbol, mode, status;

-- name: Signals that executed again after their TTL or a release
-- One row per trace ID with more than one primary order (the signal's own,
-- not a leg such as a split close's further parts): the times of every
-- execution and what freed the key in between (purge at expiry,
-- admin release). Orders are never purged, so this holds past the audit
-- retention.
SELECT o.trace_id,
       count(*)                                              AS executions,
       array_agg(o.created_at ORDER BY o.created_at)         AS executed_at,
       array_agg(o.client_order_id ORDER BY o.created_at)    AS client_order_ids,
       (SELECT count(*) FROM trace_history e
         WHERE e.trace_id = o.trace_id AND e.event = 'dispatched') AS dispatched_events,
       (SELECT array_agg(e.event || ' ' || e.at::text ORDER BY e.at) FROM trace_history e
         WHERE e.trace_id = o.trace_id AND e.event IN ('purged', 'released')) AS freed_by
FROM orders o
WHERE o.role = 'primary'
GROUP BY o.trace_id
HAVING count(*) > 1
ORDER BY max(o.created_at) DESC;

-- name: Signals that placed several orders (split closes)
-- The legs of every signal that resolved to more than one order (a close
-- split over the venue's maximum market quantity: role close_part), in
-- plan order after their primary (parent_client_order_id). A leg still
-- planned or sent but not recorded a minute after its primary is one a
-- crash left: the sweeper finishes it.
SELECT l.trace_id, l.parent_client_order_id, l.seq, l.role, l.client_order_id,
       coalesce(l.outcome, CASE WHEN l.sent_at IS NULL THEN 'planned' ELSE 'sent, not yet recorded' END) AS leg_state,
       o.status, o.side, o.quantity, o.filled_quantity, o.fill_price, o.exchange_order_id
FROM order_legs l
LEFT JOIN orders o ON o.client_order_id = l.client_order_id
WHERE l.created_at > now() - interval '7 days'
ORDER BY min(l.created_at) OVER (PARTITION BY l.parent_client_order_id) DESC, l.parent_client_order_id, l.seq;

-- name: Kill switch history
SELECT at, event, detail->>'by' AS by, detail->>'reason' AS reason
FROM trace_history
WHERE trace_id = 'admin:kill-switch'
ORDER BY at DESC, id DESC;

-- name: Stuck reconciling traces (venue answer lost, not yet resolved)
SELECT trace_id, exchange, symbol, client_order_id, received_at,
       now() - received_at AS waiting_for, expires_at
FROM trace_ids
WHERE reconciling_since IS NOT NULL -- status = 'reconciling', read through its own index
  AND received_at < now() - interval '5 minutes'
ORDER BY received_at;

-- name: Keys released by an operator
SELECT at, trace_id, detail->>'by' AS by, detail->>'status' AS status_when_released,
       detail->>'reason' AS reason
FROM trace_history
WHERE event = 'released'
ORDER BY at DESC;

-- name: Rejected orders by reason
SELECT exchange, symbol, reject_reason, count(*) AS orders, max(created_at) AS last_seen
FROM orders
WHERE status = 'rejected' AND created_at > now() - interval '7 days'
GROUP BY exchange, symbol, reject_reason
ORDER BY orders DESC, last_seen DESC;

-- name: Orders sent but not yet recorded (an attempt died mid-order)
-- The sweeper settles these within about a minute. One that stays here
-- means its venue cannot be asked (see the venue's last error on /ui/venues),
-- or, with asked_at set, that the venue (Bybit) holds no order under the ID
-- and the sweeper left it open for the signal's resend ("A missed trade"):
-- not counted in hoox_unsettled_intents, still asked about.
SELECT client_order_id, trace_id, exchange, symbol, action,
       order_spec->>'Quantity' AS quantity, sent_at, attempts, asked_at,
       now() - sent_at AS open_for
FROM dispatch_intents
WHERE outcome IS NULL
ORDER BY sent_at;

-- name: Why an order got its size (quantity_type other than base)
-- The sizing is read once, before the intent: an adopted, reconciled or
-- swept order shows the values of that first read.
SELECT trace_id, event, at,
       detail->'sizing'->>'type'       AS quantity_type,
       detail->'sizing'->>'asked'      AS asked,
       detail->'sizing'->>'price'      AS price,
       detail->'sizing'->>'free_quote' AS free_quote,
       detail->'sizing'->>'position'   AS position,
       detail->'sizing'->>'ledger'     AS spot_ledger,
       detail->'sizing'->>'free_base'  AS spot_free_base,
       detail->'sizing'->>'unrecorded_sells' AS spot_unrecorded_sells,
       detail->'sizing'->>'step'       AS step,
       detail->'sizing'->>'quantity'   AS sent,
       detail->>'reason'               AS refused_because
FROM trace_history
WHERE detail ? 'sizing' AND at > now() - interval '1 day'
ORDER BY at DESC;

-- name: Entries checked against a venue's cap on resting exits
-- Read before the intent (Binance MAX_NUM_ALGO_ORDERS, on spot also
-- MAX_NUM_ORDERS): an entry whose exits did not fit was refused, nothing
-- sent (sent = false). An exit the venue refused at its cap after such a
-- check (two signals at once) is a leg_rejected event instead, see
-- "Rejected orders by reason".
SELECT e.trace_id, e.event, e.at,
       c->>'filter' AS filter, c->>'symbol' AS symbol,
       (c->>'limit')::int AS cap, (c->>'open')::int AS open, (c->>'adds')::int AS adds,
       coalesce((e.detail->>'sent')::bool, true) AS sent
FROM trace_history e
CROSS JOIN LATERAL jsonb_array_elements(e.detail->'exit_caps') AS c
WHERE e.detail ? 'exit_caps' AND e.at > now() - interval '7 days'
ORDER BY e.at DESC;

-- name: Orders per account and outcome
-- exchange holds the account: a named account (HOOX_ACCOUNTS), or a
-- venue's name for its default account.
SELECT exchange AS account, mode, status,
       count(*)             AS orders,
       sum(filled_quantity) AS filled_quantity,
       max(created_at)      AS last_order
FROM orders
WHERE created_at > now() - interval '7 days'
GROUP BY exchange, mode, status
ORDER BY exchange, mode, status;

-- name: One fan-out on every account
-- Edit the trace ID: the signal's trace on its venue's default account
-- (a named account's trace is '@<account>:' before it).
SELECT t.trace_id, t.exchange AS account, t.status, t.client_order_id,
       o.exchange_order_id, o.status AS order_status, t.received_at
FROM trace_ids t
LEFT JOIN orders o ON o.id = t.order_id
WHERE regexp_replace(t.trace_id, '^(test:)?@[a-z0-9_-]+:', '\1') = 'k:demo-fan'
ORDER BY t.exchange;

-- name: What each strategy holds on spot (the spot ledger)
-- A spot close sells the smaller of quantity and the venue's free balance.
-- from_fills sums what the recorded fills moved: it differs from quantity
-- after an operator set the entry, or when a sell took more than the
-- strategy held (the entry stops at zero, or below it by at most what the
-- strategy's open buys have yet to fill: a close then reads zero).
SELECT l.exchange, l.mode, l.symbol, l.strategy, l.quantity, l.updated_at, l.updated_by,
       (SELECT coalesce(sum(spot_ledger_moved(o.side, o.base_asset, o.filled_quantity, o.fee, o.fee_asset)), 0)
          FROM orders o
         WHERE o.exchange = l.exchange AND o.mode = l.mode AND o.symbol = l.symbol
           AND coalesce(o.strategy, '') = l.strategy) AS from_fills
FROM spot_ledger l
ORDER BY l.exchange, l.mode, l.symbol, l.strategy;

-- name: Spot fills of one strategy, as the ledger counted them
-- moved is what each order added to (buy) or took from (sell) the entry:
-- the filled quantity, less a fee charged in the base asset.
SELECT o.created_at, o.trace_id, o.client_order_id, o.action, o.side, o.status,
       o.filled_quantity, o.fee, o.fee_asset, o.base_asset,
       spot_ledger_moved(o.side, o.base_asset, o.filled_quantity, o.fee, o.fee_asset) AS moved
FROM orders o
WHERE o.base_asset IS NOT NULL AND o.exchange = 'binance' AND o.mode = 'live'
  AND o.symbol = 'BTCUSDT' AND coalesce(o.strategy, '') = 'trend'
ORDER BY o.created_at, o.id;

-- name: Operator changes to the spot ledger
SELECT at, detail->>'exchange' AS exchange, detail->>'mode' AS mode, detail->>'symbol' AS symbol,
       detail->>'strategy' AS strategy, detail->>'was' AS was, detail->>'quantity' AS set_to,
       detail->>'by' AS by, detail->>'reason' AS reason, detail->'released_sells' AS released_sells
FROM trace_history
WHERE trace_id = 'admin:ledger' AND event = 'ledger_set'
ORDER BY at DESC, id DESC;

-- name: Orders with their attached exits (take-profit, stop-loss, trailing stop)
-- The exits a venue took on the order itself, in the shape the answer and
-- the admin API show: placed once the entry filled (or ended cancelled or
-- expired after a partial fill: Bybit keeps them on what filled, OKX drops
-- them, and hoox then clears them from the row), waiting_for_entry while a
-- limit entry rests, not_placed when the entry was rejected or ended with
-- nothing filled. An exit placed as its own order (Binance USDⓈ-M: role
-- take_profit, stop_loss or trailing_stop, its own client order ID, Binance
-- spot: a lone exit or role oco, both exits in one list, Bybit: a trailing
-- stop) is followed to its end: placed while the venue holds it, then
-- filled, cancelled or rejected as the venue says (an OCO list's executed
-- exit filled, the other cancelled), ended when the venue no longer holds it
-- without saying it executed (expired, gone with its position), not_followed
-- when it still rested at the follow horizon. A trailing stop (role
-- trailing_stop) has no trigger price: it shows the callback_rate (percent,
-- Binance) or the trailing_distance (price, Bybit) it trails by.
SELECT o.trace_id, o.client_order_id, o.exchange, o.symbol, o.side, o.status AS order_status, o.created_at,
       jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                   'role', a.role,
                   'trigger_price', trim_scale(a.trigger_price)::text,
                   'callback_rate', trim_scale(a.callback_rate)::text,
                   'trailing_distance', trim_scale(a.trailing_distance)::text,
                   'status', CASE WHEN o.role = 'primary' THEN
                                      CASE WHEN o.status = 'filled' THEN 'placed'
                                           WHEN o.status = 'open' THEN 'waiting_for_entry'
                                           WHEN o.status IN ('cancelled', 'expired') AND o.filled_quantity > 0 THEN 'placed'
                                           ELSE 'not_placed' END
                                  WHEN o.status = 'rejected' AND o.final_at IS NULL THEN 'not_placed'
                                  WHEN o.status = 'rejected' THEN 'rejected'
                                  WHEN o.status = 'open' AND o.unfollowed_at IS NOT NULL THEN 'not_followed'
                                  WHEN o.status = 'open' THEN 'placed'
                                  WHEN o.status = 'expired' THEN 'ended'
                                  WHEN o.status = 'cancelled' THEN 'cancelled'
                                  WHEN o.role = 'oco' THEN
                                      CASE WHEN o.executed_exit IS NULL THEN 'ended'
                                           WHEN o.executed_exit = a.role THEN 'filled' ELSE 'cancelled' END
                                  ELSE 'filled' END))
                 ORDER BY a.n) AS attached
FROM orders o
CROSS JOIN LATERAL (VALUES (1, 'take_profit', o.take_profit, NULL::numeric, NULL::numeric),
                           (2, 'stop_loss', o.stop_loss, NULL, NULL),
                           (3, 'trailing_stop', NULL, o.callback_rate, o.trailing_distance))
                        AS a(n, role, trigger_price, callback_rate, trailing_distance)
WHERE (a.trigger_price IS NOT NULL OR a.callback_rate IS NOT NULL OR a.trailing_distance IS NOT NULL) AND o.created_at > now() - interval '7 days'
GROUP BY o.id
ORDER BY o.created_at DESC;

-- name: Fills and fees of orders followed to their end
-- A limit order (or a market order the venue was still executing, or an exit
-- placed as its own order: role take_profit, stop_loss, trailing_stop, oco) is
-- followed by a job until it ends, and every change is an order_* event on its
-- trace. fee is what the venue charged, in fee_asset, cancelled_by names
-- the cancel signal that cancelled it, and executed_exit which order of an
-- OCO list executed.
SELECT created_at, trace_id, client_order_id, exchange, symbol, side, order_type, role,
       quantity, filled_quantity, avg_price, fee, fee_asset, status,
       final_at - created_at AS open_for, cancelled_by, executed_exit
FROM orders
WHERE order_type = 'limit' OR updated_at IS NOT NULL
ORDER BY created_at DESC
LIMIT 100;
