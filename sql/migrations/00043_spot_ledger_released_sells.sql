-- +goose Up
-- ledger_released_by names who ended the reservation of this intent's
-- sell in its strategy's spot ledger entry. A spot sell whose intent ended
-- failed with its order unknown (a missed trade, a reconcile given up)
-- counts as sold in its entry, so a later close does not sell its coins
-- again, until it is decided — found and recorded, proven absent — or an
-- operator, having checked the venue, sets the entry (db.SetLedger, which
-- marks it with the operator). Nullable, no default: no table rewrite.
ALTER TABLE dispatch_intents ADD COLUMN ledger_released_by text;

-- The failed spot sells already here were never counted as sold, and
-- operators have corrected their entries by hand since (README's former
-- "an operator corrects the entry"): counted from now on, they would make
-- every later close of their strategies short by them at once. They keep
-- the rule they were settled under. Read through dispatch_intents_unknown_idx.
UPDATE dispatch_intents SET ledger_released_by = 'migration 00043'
WHERE outcome = 'failed' AND order_spec->>'Side' = 'sell' AND jsonb_typeof(order_spec->'Ledger') = 'object';

-- The parts a released close planned (a split spot close) are not sent
-- if its order turns up later: the close was given up, and the entry's
-- value set since no longer counts them, so they would sell coins the
-- strategy does not hold. They are planned not_placed, each with a
-- leg_failed event saying why. Otherwise as 00027's.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION plan_order_legs_of(o orders) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    WITH planned AS (
        INSERT INTO order_legs (client_order_id, parent_client_order_id, seq, role, trace_id, lock_key,
                                exchange, mode, order_spec, outcome, settled_at)
        SELECT l.leg->'Order'->>'ClientOrderID', i.client_order_id, l.n::integer, l.leg->>'Role', o.trace_id,
               i.lock_key, i.exchange, i.mode, l.leg->'Order',
               CASE WHEN released THEN 'not_placed' END, CASE WHEN released THEN now() END
        FROM dispatch_intents i
        CROSS JOIN LATERAL jsonb_array_elements(
            CASE WHEN jsonb_typeof(i.order_spec->'Legs') = 'array' THEN i.order_spec->'Legs' ELSE '[]'::jsonb END
        ) WITH ORDINALITY AS l(leg, n)
        CROSS JOIN LATERAL (SELECT i.ledger_released_by IS NOT NULL AND l.leg->>'Role' = 'close_part' AS released) r
        WHERE i.client_order_id = o.client_order_id
        ON CONFLICT (client_order_id) DO NOTHING
        RETURNING client_order_id, seq, role, outcome
    )
    INSERT INTO trace_events (trace_id, event, detail)
    SELECT o.trace_id, 'leg_failed',
           jsonb_build_object('client_order_id', p.client_order_id, 'role', p.role, 'seq', p.seq,
                              'parent_client_order_id', o.client_order_id, 'released_by', i.ledger_released_by,
                              'reason', 'the close was released from its spot ledger entry by ' || i.ledger_released_by
                                        || ' while its order was unknown: the order turned up, and the rest of the close is not sent')
    FROM planned p
    JOIN dispatch_intents i ON i.client_order_id = o.client_order_id
    WHERE p.outcome = 'not_placed';
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION plan_order_legs_of(o orders) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO order_legs (client_order_id, parent_client_order_id, seq, role, trace_id, lock_key,
                            exchange, mode, order_spec)
    SELECT l.leg->'Order'->>'ClientOrderID', i.client_order_id, l.n::integer, l.leg->>'Role', o.trace_id,
           i.lock_key, i.exchange, i.mode, l.leg->'Order'
    FROM dispatch_intents i
    CROSS JOIN LATERAL jsonb_array_elements(
        CASE WHEN jsonb_typeof(i.order_spec->'Legs') = 'array' THEN i.order_spec->'Legs' ELSE '[]'::jsonb END
    ) WITH ORDINALITY AS l(leg, n)
    WHERE i.client_order_id = o.client_order_id
    ON CONFLICT (client_order_id) DO NOTHING;
END
$$;
-- +goose StatementEnd
ALTER TABLE dispatch_intents DROP COLUMN ledger_released_by;
