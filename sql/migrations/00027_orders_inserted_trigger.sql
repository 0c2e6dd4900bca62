-- +goose Up
-- Issue 21, cost per signal: three AFTER INSERT row triggers on orders
-- (orders_plan_exits_on_partial_end, orders_plan_legs and the insert half of
-- orders_spot_ledger) each had their WHEN clause read back from its stored
-- text and compiled in every statement that inserts an order, although on
-- nearly every signal none of them fires. With the three, the settlement's
-- one statement spent 17–24 % of its time on them; with none, nothing. One
-- trigger with the cheapest WHEN that still lets through every row one of
-- the three would have taken does their work in their order:
--   * partial-end exits and legs both read the intent's legs, and
--     plans_legs is false only when the gateway knows the order has none
--     (00023), so both now also wait for plans_legs;
--   * the spot ledger moves for any row with a base asset, as before.
-- The work itself moves into functions of the row, which the update
-- triggers (unchanged) call too.

-- +goose StatementBegin
CREATE FUNCTION plan_order_legs_of(o orders) RETURNS void LANGUAGE plpgsql AS $$
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION plan_order_legs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.role = 'primary' AND NEW.status = 'filled' THEN
        PERFORM plan_order_legs_of(NEW);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION plan_exit_legs_of(o orders) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    dropped boolean := o.status = 'cancelled' AND o.cancelled_by IS NOT NULL;
BEGIN
    WITH planned AS (
        INSERT INTO order_legs (client_order_id, parent_client_order_id, seq, role, trace_id, lock_key,
                                exchange, mode, order_spec, outcome, settled_at)
        SELECT l.leg->'Order'->>'ClientOrderID', i.client_order_id, l.n::integer, l.leg->>'Role', o.trace_id,
               i.lock_key, i.exchange, i.mode, l.leg->'Order',
               CASE WHEN dropped THEN 'not_placed' END, CASE WHEN dropped THEN now() END
        FROM dispatch_intents i
        CROSS JOIN LATERAL jsonb_array_elements(
            CASE WHEN jsonb_typeof(i.order_spec->'Legs') = 'array' THEN i.order_spec->'Legs' ELSE '[]'::jsonb END
        ) WITH ORDINALITY AS l(leg, n)
        WHERE i.client_order_id = o.client_order_id
          AND l.leg->>'Role' IN ('take_profit', 'stop_loss', 'trailing_stop', 'oco')
        ON CONFLICT (client_order_id) DO NOTHING
        RETURNING client_order_id, seq, role, outcome
    )
    INSERT INTO trace_events (trace_id, event, detail)
    SELECT o.trace_id, 'leg_failed',
           jsonb_build_object('client_order_id', p.client_order_id, 'role', p.role, 'seq', p.seq,
                              'parent_client_order_id', o.client_order_id, 'cancelled_by', o.cancelled_by,
                              'filled_quantity', trim_scale(o.filled_quantity)::text,
                              'reason', 'the cancel signal ' || o.cancelled_by || ' ended the entry after '
                                        || trim_scale(o.filled_quantity)::text
                                        || ' filled: a cancel leaves no hoox order of the symbol resting, so this exit is not placed')
    FROM planned p
    WHERE p.outcome = 'not_placed';
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION plan_exit_legs_on_partial_end() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM plan_exit_legs_of(NEW);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION spot_ledger_add(o orders, delta numeric) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF o.base_asset IS NULL OR delta = 0 THEN
        RETURN;
    END IF;
    INSERT INTO spot_ledger AS l (exchange, mode, symbol, strategy, quantity)
    VALUES (o.exchange, o.mode, o.symbol, coalesce(o.strategy, ''), greatest(delta, 0))
    ON CONFLICT (exchange, mode, symbol, strategy) DO UPDATE
    SET quantity = greatest(l.quantity + delta, 0), updated_at = now(), updated_by = 'fill';
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION spot_ledger_apply() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    delta numeric := spot_ledger_moved(NEW.side, NEW.base_asset, NEW.filled_quantity, NEW.fee, NEW.fee_asset);
BEGIN
    IF TG_OP = 'UPDATE' THEN
        delta := delta - spot_ledger_moved(OLD.side, OLD.base_asset, OLD.filled_quantity, OLD.fee, OLD.fee_asset);
    END IF;
    PERFORM spot_ledger_add(NEW, delta);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION orders_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- In the order the three triggers it replaces fired (by name).
    IF NEW.role = 'primary' AND NEW.status IN ('cancelled', 'expired') AND NEW.filled_quantity > 0 THEN
        PERFORM plan_exit_legs_of(NEW);
    END IF;
    IF NEW.role = 'primary' AND NEW.status = 'filled' AND NEW.plans_legs THEN
        PERFORM plan_order_legs_of(NEW);
    END IF;
    IF NEW.base_asset IS NOT NULL THEN
        PERFORM spot_ledger_add(NEW, spot_ledger_moved(NEW.side, NEW.base_asset, NEW.filled_quantity, NEW.fee,
                                                       NEW.fee_asset));
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

DROP TRIGGER orders_plan_exits_on_partial_end ON orders;
DROP TRIGGER orders_plan_legs ON orders;
DROP TRIGGER orders_spot_ledger ON orders;
CREATE TRIGGER orders_spot_ledger AFTER UPDATE OF side, base_asset, filled_quantity, fee, fee_asset ON orders
    FOR EACH ROW WHEN (NEW.base_asset IS NOT NULL) EXECUTE FUNCTION spot_ledger_apply();
CREATE TRIGGER orders_inserted AFTER INSERT ON orders
    FOR EACH ROW WHEN (NEW.plans_legs OR NEW.base_asset IS NOT NULL) EXECUTE FUNCTION orders_inserted();

-- +goose Down
DROP TRIGGER orders_inserted ON orders;
DROP TRIGGER orders_spot_ledger ON orders;
CREATE TRIGGER orders_spot_ledger AFTER INSERT OR UPDATE OF side, base_asset, filled_quantity, fee, fee_asset ON orders
    FOR EACH ROW WHEN (NEW.base_asset IS NOT NULL) EXECUTE FUNCTION spot_ledger_apply();
CREATE TRIGGER orders_plan_exits_on_partial_end AFTER INSERT ON orders
    FOR EACH ROW WHEN (NEW.role = 'primary' AND NEW.status IN ('cancelled', 'expired') AND NEW.filled_quantity > 0)
    EXECUTE FUNCTION plan_exit_legs_on_partial_end();
CREATE TRIGGER orders_plan_legs AFTER INSERT ON orders
    FOR EACH ROW WHEN (NEW.role = 'primary' AND NEW.status = 'filled' AND NEW.plans_legs) EXECUTE FUNCTION plan_order_legs();
DROP FUNCTION orders_inserted();
-- The trigger functions hold their work again, as 00012, 00013 and 00018
-- wrote it, before the functions of the row are dropped.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION spot_ledger_apply() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    delta numeric := spot_ledger_moved(NEW.side, NEW.base_asset, NEW.filled_quantity, NEW.fee, NEW.fee_asset);
BEGIN
    IF TG_OP = 'UPDATE' THEN
        delta := delta - spot_ledger_moved(OLD.side, OLD.base_asset, OLD.filled_quantity, OLD.fee, OLD.fee_asset);
    END IF;
    IF NEW.base_asset IS NULL OR delta = 0 THEN
        RETURN NULL;
    END IF;
    INSERT INTO spot_ledger AS l (exchange, mode, symbol, strategy, quantity)
    VALUES (NEW.exchange, NEW.mode, NEW.symbol, coalesce(NEW.strategy, ''), greatest(delta, 0))
    ON CONFLICT (exchange, mode, symbol, strategy) DO UPDATE
    SET quantity = greatest(l.quantity + delta, 0), updated_at = now(), updated_by = 'fill';
    RETURN NULL;
END
$$;
-- +goose StatementEnd
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
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION plan_exit_legs_on_partial_end() RETURNS trigger LANGUAGE plpgsql AS $$
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
DROP FUNCTION spot_ledger_add(orders, numeric);
DROP FUNCTION plan_exit_legs_of(orders);
DROP FUNCTION plan_order_legs_of(orders);
