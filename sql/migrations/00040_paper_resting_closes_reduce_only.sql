-- +goose Up
-- 00035 marked the paper venue's reducing orders from then on; a close
-- still resting from before it (or placed by a replica of an older release
-- during that rollout) read as a plain sell: a later close of the whole
-- position neither cancelled nor counted it, and once the price crossed
-- it, it sold the long again and left the book short. Such rows are marked
-- from what hoox recorded of them: the intent's or the leg's order (a
-- close has an empty side; a reduce-only order says so) or the order's
-- action. An order spec without a side at all is no evidence: 00004 gave
-- the orders before it an empty spec ('{}').
UPDATE paper_orders p SET reduce_only = true
WHERE p.status = 'open' AND NOT p.reduce_only
  AND (EXISTS (SELECT 1 FROM dispatch_intents i WHERE i.client_order_id = p.client_order_id
               AND (i.order_spec->>'ReduceOnly' = 'true' OR (i.order_spec ? 'Side' AND i.order_spec->>'Side' = '')))
    OR EXISTS (SELECT 1 FROM order_legs l WHERE l.client_order_id = p.client_order_id
               AND (l.order_spec->>'ReduceOnly' = 'true' OR (l.order_spec ? 'Side' AND l.order_spec->>'Side' = '')))
    OR EXISTS (SELECT 1 FROM orders o WHERE o.client_order_id = p.client_order_id
               AND o.action IN ('close', 'close_long', 'close_short')));

-- +goose Down
-- The marks stay: the release before reads reduce_only too (00035).
SELECT 1;
