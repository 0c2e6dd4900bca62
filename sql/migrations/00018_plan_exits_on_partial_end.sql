-- +goose Up
-- Issue 19: a limit entry that fills in part and then ends — cancelled (by
-- the venue, by hand at the venue, or by hoox's cancel action) or expired
-- (time in force, self-trade prevention) — is never recorded `filled`, so
-- 00013/00015 never planned its exits: what it bought stayed without the
-- take-profit / stop-loss / trailing stop / OCO the signal asked for.
--
-- A primary that ends cancelled or expired with filled_quantity > 0 now gets
-- its exit legs planned exactly as a filled one (the leg runner sizes them to
-- what filled and takes percentages from the average fill price). Only exit
-- legs: the further parts of a split close follow a first part that executed
-- in full, and are not planned after a partial one.
--
-- Except when hoox's own cancel action ended it (cancelled_by names the
-- cancel signal): a cancel leaves no hoox order of its symbol resting — it
-- cancels the exits of a filled entry too — so the exits of an entry it ends
-- are recorded as planned and settled `not_placed` at once, with a
-- `leg_failed` event on the entry's trace saying why (docs/DECISIONS.md).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION plan_order_legs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    partial boolean := NEW.status IN ('cancelled', 'expired');
    dropped boolean := NEW.status = 'cancelled' AND NEW.cancelled_by IS NOT NULL;
BEGIN
    IF NEW.role <> 'primary' OR NOT (NEW.status = 'filled' OR (partial AND NEW.filled_quantity > 0)) THEN
        RETURN NULL;
    END IF;
    WITH planned AS (
        INSERT INTO order_legs (client_order_id, parent_client_order_id, seq, role, trace_id, lock_key,
                                exchange, mode, order_spec, outcome, settled_at)
        SELECT l.leg->'Order'->>'ClientOrderID', i.client_order_id, l.n::integer, l.leg->>'Role', NEW.trace_id,
               i.lock_key, i.exchange, i.mode, l.leg->'Order',
               CASE WHEN dropped THEN 'not_placed' END, CASE WHEN dropped THEN now() END
        FROM dispatch_intents i
        CROSS JOIN LATERAL jsonb_array_elements(
            CASE WHEN jsonb_typeof(i.order_spec->'Legs') = 'array' THEN i.order_spec->'Legs' ELSE '[]'::jsonb END
        ) WITH ORDINALITY AS l(leg, n)
        WHERE i.client_order_id = NEW.client_order_id
          AND (NOT partial OR l.leg->>'Role' IN ('take_profit', 'stop_loss', 'trailing_stop', 'oco'))
        ON CONFLICT (client_order_id) DO NOTHING
        RETURNING client_order_id, seq, role, outcome
    )
    INSERT INTO trace_events (trace_id, event, detail)
    SELECT NEW.trace_id, 'leg_failed',
           jsonb_build_object('client_order_id', p.client_order_id, 'role', p.role, 'seq', p.seq,
                              'parent_client_order_id', NEW.client_order_id, 'cancelled_by', NEW.cancelled_by,
                              'filled_quantity', trim_scale(NEW.filled_quantity)::text,
                              'reason', 'the cancel signal ' || NEW.cancelled_by || ' ended the entry after '
                                        || trim_scale(NEW.filled_quantity)::text
                                        || ' filled: a cancel leaves no hoox order of the symbol resting, so this exit is not placed')
    FROM planned p
    WHERE p.outcome = 'not_placed';
    RETURN NULL;
END
$$;
-- +goose StatementEnd

DROP TRIGGER orders_plan_legs ON orders;
CREATE TRIGGER orders_plan_legs AFTER INSERT ON orders
    FOR EACH ROW WHEN (NEW.role = 'primary' AND (NEW.status = 'filled'
                       OR (NEW.status IN ('cancelled', 'expired') AND NEW.filled_quantity > 0)))
    EXECUTE FUNCTION plan_order_legs();

DROP TRIGGER orders_plan_legs_on_fill ON orders;
CREATE TRIGGER orders_plan_legs_on_fill AFTER UPDATE OF status ON orders
    FOR EACH ROW WHEN (NEW.role = 'primary' AND OLD.status IS DISTINCT FROM NEW.status AND (NEW.status = 'filled'
                       OR (NEW.status IN ('cancelled', 'expired') AND NEW.filled_quantity > 0)))
    EXECUTE FUNCTION plan_order_legs();

-- +goose Down
DROP TRIGGER orders_plan_legs_on_fill ON orders;
CREATE TRIGGER orders_plan_legs_on_fill AFTER UPDATE OF status ON orders
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM 'filled' AND NEW.status = 'filled' AND NEW.role = 'primary')
    EXECUTE FUNCTION plan_order_legs();
DROP TRIGGER orders_plan_legs ON orders;
CREATE TRIGGER orders_plan_legs AFTER INSERT ON orders
    FOR EACH ROW WHEN (NEW.role = 'primary' AND NEW.status = 'filled') EXECUTE FUNCTION plan_order_legs();
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION plan_order_legs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.role = 'primary' AND NEW.status = 'filled' THEN
        INSERT INTO order_legs (client_order_id, parent_client_order_id, seq, role, trace_id, lock_key,
                                exchange, mode, order_spec)
        SELECT l.leg->'Order'->>'ClientOrderID', i.client_order_id, l.n::integer, l.leg->>'Role', NEW.trace_id,
               i.lock_key, i.exchange, i.mode, l.leg->'Order'
        FROM dispatch_intents i
        CROSS JOIN LATERAL jsonb_array_elements(
            CASE WHEN jsonb_typeof(i.order_spec->'Legs') = 'array' THEN i.order_spec->'Legs' ELSE '[]'::jsonb END
        ) WITH ORDINALITY AS l(leg, n)
        WHERE i.client_order_id = NEW.client_order_id
        ON CONFLICT (client_order_id) DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
