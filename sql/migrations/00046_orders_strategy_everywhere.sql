-- +goose Up
-- orders.strategy was set on spot orders only (00012, for the spot
-- ledger); hoox now records the signal's strategy on every order and exit
-- it places (exchange.Order.Strategy, in the intent and the leg), so a
-- cancel that names a strategy takes only that strategy's orders on every
-- venue. What was placed before this runs carries none; where the
-- intent's canonical signal says which strategy sent it (intents are
-- never purged), it is filled in here for what a cancel may still take:
--   - orders still open, and entries whose exits are still to settle
--     (the cancel reads an exit leg's strategy from its entry's row);
--   - intents and legs not settled yet, whose orders are recorded later
--     from their order_spec — an intent's planned legs (Legs[].Order,
--     which plan_order_legs copies into order_legs) too.
-- A signal that named no strategy is "" (the strategy of signals without
-- one, as on spot). Where the signal holds no strategy key (none read),
-- the row keeps NULL: every cancel of its symbol takes it, as before.
-- No trigger fires on orders.strategy (the spot ledger's fire on their
-- own columns), and a spot row's strategy is never changed (not NULL).
UPDATE orders o SET strategy = i.signal->>'strategy'
FROM dispatch_intents i
WHERE o.strategy IS NULL AND i.client_order_id = o.client_order_id AND i.signal ? 'strategy'
  AND (o.status = 'open'
       OR EXISTS (SELECT 1 FROM order_legs l WHERE l.parent_client_order_id = o.client_order_id
                                               AND (l.outcome IS NULL OR l.outcome = 'failed')));

UPDATE orders o SET strategy = i.signal->>'strategy'
FROM order_legs l JOIN dispatch_intents i ON i.client_order_id = l.parent_client_order_id
WHERE o.strategy IS NULL AND o.status = 'open' AND l.client_order_id = o.client_order_id AND i.signal ? 'strategy';

UPDATE dispatch_intents i
SET order_spec = i.order_spec || jsonb_build_object('Strategy', i.signal->>'strategy')
    || CASE WHEN jsonb_typeof(i.order_spec->'Legs') = 'array' THEN jsonb_build_object('Legs', coalesce(
           (SELECT jsonb_agg(CASE WHEN jsonb_typeof(l.leg->'Order') = 'object'
                                  THEN jsonb_set(l.leg, '{Order,Strategy}', to_jsonb(i.signal->>'strategy'))
                                  ELSE l.leg END ORDER BY l.n)
            FROM jsonb_array_elements(i.order_spec->'Legs') WITH ORDINALITY AS l(leg, n)), '[]'::jsonb))
       ELSE '{}'::jsonb END
WHERE (i.outcome IS NULL OR i.outcome IN ('failed', 'reconciling')) AND i.signal ? 'strategy'
  AND jsonb_typeof(i.order_spec) = 'object' AND NOT i.order_spec ? 'Strategy';

UPDATE order_legs l SET order_spec = l.order_spec || jsonb_build_object('Strategy', i.signal->>'strategy')
FROM dispatch_intents i
WHERE i.client_order_id = l.parent_client_order_id AND (l.outcome IS NULL OR l.outcome = 'failed')
  AND i.signal ? 'strategy' AND jsonb_typeof(l.order_spec) = 'object' AND NOT l.order_spec ? 'Strategy';

-- +goose Down
-- Nothing to undo: the strategies filled in are the signals' own, and a
-- binary before this one reads them on spot as it always did and ignores
-- them elsewhere.
SELECT 1;
