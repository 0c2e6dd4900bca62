-- +goose Up
-- Issue 19: a limit entry that fills in part and then ends — cancelled (by
-- the venue, by hand at the venue, or by hoox's cancel action) or expired
-- (time in force, self-trade prevention) — is never recorded `filled`, so
-- the triggers of 00013/00015 never planned its exits: what it bought stayed
-- without the take-profit / stop-loss / trailing stop / OCO the signal
-- asked for.
--
-- A primary that ends cancelled or expired with filled_quantity > 0 now gets
-- its exit legs planned as a filled one does (the leg runner sizes them to
-- what filled and takes percentages from the average fill price). Only exit
-- legs: the further parts of a split close follow a first part that
-- executed in full, and are not planned after a partial one.
--
-- Except when hoox's own cancel action ended it (cancelled_by names the
-- cancel signal): a cancel leaves no hoox order of its symbol resting — it
-- cancels the exits of a filled entry too — so the exits of an entry it ends
-- are recorded as planned and settled `not_placed` at once, with a
-- `leg_failed` event on the entry's trace saying why (docs/DECISIONS.md).
--
-- Triggers and a function of their own, beside orders_plan_legs and
-- orders_plan_legs_on_fill (which later migrations may redefine for filled
-- orders): their WHEN clause lets every other order skip them.
-- +goose StatementBegin
CREATE FUNCTION plan_exit_legs_on_partial_end() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    dropped boolean := NEW.status = 'cancelled' AND NEW.cancelled_by IS NOT NULL;
BEGIN
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
          AND l.leg->>'Role' IN ('take_profit', 'stop_loss', 'trailing_stop', 'oco')
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

CREATE TRIGGER orders_plan_exits_on_partial_end AFTER INSERT ON orders
    FOR EACH ROW WHEN (NEW.role = 'primary' AND NEW.status IN ('cancelled', 'expired') AND NEW.filled_quantity > 0)
    EXECUTE FUNCTION plan_exit_legs_on_partial_end();

CREATE TRIGGER orders_plan_exits_on_partial_end_update AFTER UPDATE OF status ON orders
    FOR EACH ROW WHEN (NEW.role = 'primary' AND OLD.status IS DISTINCT FROM NEW.status
                       AND NEW.status IN ('cancelled', 'expired') AND NEW.filled_quantity > 0)
    EXECUTE FUNCTION plan_exit_legs_on_partial_end();

-- +goose Down
DROP TRIGGER orders_plan_exits_on_partial_end_update ON orders;
DROP TRIGGER orders_plan_exits_on_partial_end ON orders;
DROP FUNCTION plan_exit_legs_on_partial_end();
