-- +goose Up
-- Issue 21, cost per signal. A table's CHECK constraints are read back from
-- their stored text and compiled again by every statement that inserts or
-- updates a row (ExecConstraints): a new signal wrote trace_ids and
-- dispatch_intents twice each and orders once, 21 checks in all, about 6 %
-- of Postgres's CPU per signal. A domain's constraint is compiled once per
-- connection (the type cache), so the same rules cost almost nothing per
-- statement. The values allowed are exactly the checks' own.
--
-- A later migration that allows a new value alters the domain:
--   ALTER DOMAIN hoox_order_status DROP CONSTRAINT hoox_order_status_check;
--   ALTER DOMAIN hoox_order_status ADD CONSTRAINT hoox_order_status_check CHECK (VALUE IN (…));
-- A domain compares, sorts and coalesces as text, so queries read the same.
--
-- Changing a column's type rewrites the table under an exclusive lock: on a
-- large orders table this migration takes a while (hoox does not answer
-- signals meanwhile; every replica waits for the migration).
CREATE DOMAIN hoox_mode AS text CONSTRAINT hoox_mode_check CHECK (VALUE IN ('live', 'test'));
CREATE DOMAIN hoox_key_source AS text CONSTRAINT hoox_key_source_check CHECK (VALUE IN ('client', 'derived', 'window'));
CREATE DOMAIN hoox_trace_status AS text CONSTRAINT hoox_trace_status_check
    CHECK (VALUE IN ('claimed', 'dispatched', 'rejected', 'reconciling', 'failed'));
CREATE DOMAIN hoox_intent_outcome AS text CONSTRAINT hoox_intent_outcome_check
    CHECK (VALUE IN ('dispatched', 'rejected', 'reconciling', 'unsent', 'not_placed', 'key_reused', 'failed'));
CREATE DOMAIN hoox_side AS text CONSTRAINT hoox_side_check CHECK (VALUE IN ('buy', 'sell'));
CREATE DOMAIN hoox_order_type AS text CONSTRAINT hoox_order_type_check CHECK (VALUE IN ('market', 'limit'));
CREATE DOMAIN hoox_order_status AS text CONSTRAINT hoox_order_status_check
    CHECK (VALUE IN ('filled', 'open', 'rejected', 'cancelled', 'expired'));
CREATE DOMAIN hoox_order_role AS text CONSTRAINT hoox_order_role_check
    CHECK (VALUE IN ('primary', 'close_part', 'take_profit', 'stop_loss', 'trailing_stop', 'oco'));
CREATE DOMAIN hoox_exit AS text CONSTRAINT hoox_exit_check CHECK (VALUE IN ('take_profit', 'stop_loss', 'trailing_stop'));

ALTER TABLE trace_ids
    DROP CONSTRAINT trace_ids_key_source_check, DROP CONSTRAINT trace_ids_mode_check, DROP CONSTRAINT trace_ids_status_check,
    ALTER COLUMN key_source TYPE hoox_key_source, ALTER COLUMN mode TYPE hoox_mode, ALTER COLUMN status TYPE hoox_trace_status;

ALTER TABLE dispatch_intents
    DROP CONSTRAINT dispatch_intents_key_source_check, DROP CONSTRAINT dispatch_intents_mode_check,
    DROP CONSTRAINT dispatch_intents_outcome_check,
    ALTER COLUMN key_source TYPE hoox_key_source, ALTER COLUMN mode TYPE hoox_mode, ALTER COLUMN outcome TYPE hoox_intent_outcome;

-- The triggers name these columns (WHEN, UPDATE OF), which a type change
-- refuses: they are dropped and created again exactly as they were.
DROP TRIGGER orders_spot_ledger ON orders;
DROP TRIGGER orders_plan_exits_on_partial_end ON orders;
DROP TRIGGER orders_plan_exits_on_partial_end_update ON orders;
DROP TRIGGER orders_plan_legs ON orders;
DROP TRIGGER orders_plan_legs_on_fill ON orders;

-- The three numeric checks become one (a row fails it exactly when it
-- would have failed one of them).
ALTER TABLE orders
    DROP CONSTRAINT orders_mode_check, DROP CONSTRAINT orders_side_check, DROP CONSTRAINT orders_order_type_check,
    DROP CONSTRAINT orders_status_check, DROP CONSTRAINT orders_role_check, DROP CONSTRAINT orders_executed_exit_check,
    DROP CONSTRAINT orders_quantity_check, DROP CONSTRAINT orders_price_check, DROP CONSTRAINT orders_leverage_check,
    ALTER COLUMN mode TYPE hoox_mode, ALTER COLUMN side TYPE hoox_side, ALTER COLUMN order_type TYPE hoox_order_type,
    ALTER COLUMN status TYPE hoox_order_status, ALTER COLUMN role TYPE hoox_order_role,
    ALTER COLUMN executed_exit TYPE hoox_exit,
    ADD CONSTRAINT orders_amounts_check CHECK (quantity > 0 AND price > 0 AND leverage BETWEEN 1 AND 125);

CREATE TRIGGER orders_spot_ledger AFTER INSERT OR UPDATE OF side, base_asset, filled_quantity, fee, fee_asset ON orders
    FOR EACH ROW WHEN (NEW.base_asset IS NOT NULL) EXECUTE FUNCTION spot_ledger_apply();
CREATE TRIGGER orders_plan_exits_on_partial_end AFTER INSERT ON orders
    FOR EACH ROW WHEN (NEW.role = 'primary' AND NEW.status IN ('cancelled', 'expired') AND NEW.filled_quantity > 0)
    EXECUTE FUNCTION plan_exit_legs_on_partial_end();
CREATE TRIGGER orders_plan_exits_on_partial_end_update AFTER UPDATE OF status ON orders
    FOR EACH ROW WHEN (NEW.role = 'primary' AND OLD.status IS DISTINCT FROM NEW.status AND NEW.status IN ('cancelled', 'expired')
                       AND NEW.filled_quantity > 0)
    EXECUTE FUNCTION plan_exit_legs_on_partial_end();
CREATE TRIGGER orders_plan_legs AFTER INSERT ON orders
    FOR EACH ROW WHEN (NEW.role = 'primary' AND NEW.status = 'filled' AND NEW.plans_legs) EXECUTE FUNCTION plan_order_legs();
CREATE TRIGGER orders_plan_legs_on_fill AFTER UPDATE OF status ON orders
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM 'filled' AND NEW.status = 'filled' AND NEW.role = 'primary' AND NEW.plans_legs)
    EXECUTE FUNCTION plan_order_legs();

-- +goose Down
DROP TRIGGER orders_spot_ledger ON orders;
DROP TRIGGER orders_plan_exits_on_partial_end ON orders;
DROP TRIGGER orders_plan_exits_on_partial_end_update ON orders;
DROP TRIGGER orders_plan_legs ON orders;
DROP TRIGGER orders_plan_legs_on_fill ON orders;
ALTER TABLE orders
    DROP CONSTRAINT orders_amounts_check,
    ALTER COLUMN mode TYPE text, ALTER COLUMN side TYPE text, ALTER COLUMN order_type TYPE text,
    ALTER COLUMN status TYPE text, ALTER COLUMN role TYPE text, ALTER COLUMN executed_exit TYPE text,
    ADD CONSTRAINT orders_quantity_check CHECK (quantity > 0), ADD CONSTRAINT orders_price_check CHECK (price > 0),
    ADD CONSTRAINT orders_leverage_check CHECK (leverage BETWEEN 1 AND 125),
    ADD CONSTRAINT orders_mode_check CHECK (mode IN ('live', 'test')),
    ADD CONSTRAINT orders_side_check CHECK (side IN ('buy', 'sell')),
    ADD CONSTRAINT orders_order_type_check CHECK (order_type IN ('market', 'limit')),
    ADD CONSTRAINT orders_status_check CHECK (status IN ('filled', 'open', 'rejected', 'cancelled', 'expired')),
    ADD CONSTRAINT orders_role_check CHECK (role IN ('primary', 'close_part', 'take_profit', 'stop_loss', 'trailing_stop', 'oco')),
    ADD CONSTRAINT orders_executed_exit_check CHECK (executed_exit IN ('take_profit', 'stop_loss', 'trailing_stop'));
CREATE TRIGGER orders_spot_ledger AFTER INSERT OR UPDATE OF side, base_asset, filled_quantity, fee, fee_asset ON orders
    FOR EACH ROW WHEN (NEW.base_asset IS NOT NULL) EXECUTE FUNCTION spot_ledger_apply();
CREATE TRIGGER orders_plan_exits_on_partial_end AFTER INSERT ON orders
    FOR EACH ROW WHEN (NEW.role = 'primary' AND NEW.status IN ('cancelled', 'expired') AND NEW.filled_quantity > 0)
    EXECUTE FUNCTION plan_exit_legs_on_partial_end();
CREATE TRIGGER orders_plan_exits_on_partial_end_update AFTER UPDATE OF status ON orders
    FOR EACH ROW WHEN (NEW.role = 'primary' AND OLD.status IS DISTINCT FROM NEW.status AND NEW.status IN ('cancelled', 'expired')
                       AND NEW.filled_quantity > 0)
    EXECUTE FUNCTION plan_exit_legs_on_partial_end();
CREATE TRIGGER orders_plan_legs AFTER INSERT ON orders
    FOR EACH ROW WHEN (NEW.role = 'primary' AND NEW.status = 'filled' AND NEW.plans_legs) EXECUTE FUNCTION plan_order_legs();
CREATE TRIGGER orders_plan_legs_on_fill AFTER UPDATE OF status ON orders
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM 'filled' AND NEW.status = 'filled' AND NEW.role = 'primary' AND NEW.plans_legs)
    EXECUTE FUNCTION plan_order_legs();
ALTER TABLE dispatch_intents
    ALTER COLUMN key_source TYPE text, ALTER COLUMN mode TYPE text, ALTER COLUMN outcome TYPE text,
    ADD CONSTRAINT dispatch_intents_key_source_check CHECK (key_source IN ('client', 'derived', 'window')),
    ADD CONSTRAINT dispatch_intents_mode_check CHECK (mode IN ('live', 'test')),
    ADD CONSTRAINT dispatch_intents_outcome_check
        CHECK (outcome IN ('dispatched', 'rejected', 'reconciling', 'unsent', 'not_placed', 'key_reused', 'failed'));
ALTER TABLE trace_ids
    ALTER COLUMN key_source TYPE text, ALTER COLUMN mode TYPE text, ALTER COLUMN status TYPE text,
    ADD CONSTRAINT trace_ids_key_source_check CHECK (key_source IN ('client', 'derived', 'window')),
    ADD CONSTRAINT trace_ids_mode_check CHECK (mode IN ('live', 'test')),
    ADD CONSTRAINT trace_ids_status_check CHECK (status IN ('claimed', 'dispatched', 'rejected', 'reconciling', 'failed'));
DROP DOMAIN hoox_exit, hoox_order_role, hoox_order_status, hoox_order_type, hoox_side, hoox_intent_outcome,
    hoox_trace_status, hoox_key_source, hoox_mode;
