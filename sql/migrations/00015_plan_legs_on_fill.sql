-- +goose Up
-- Issue 19: a primary order recorded `open` (a market order the venue was
-- still executing past the reconcile's follow bound) is later recorded
-- `filled` by its follow job (00011), an UPDATE. 00013 planned a primary's
-- legs only when the row was inserted filled, so such an entry's exits, or
-- such a close's further parts, were never planned. Plan them on the update
-- too; plan_order_legs inserts ON CONFLICT DO NOTHING, so a row planned
-- twice is planned once. The sweeper places legs left open (ListOpenLegs).
CREATE TRIGGER orders_plan_legs_on_fill AFTER UPDATE OF status ON orders
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM 'filled' AND NEW.status = 'filled' AND NEW.role = 'primary')
    EXECUTE FUNCTION plan_order_legs();

-- +goose Down
DROP TRIGGER orders_plan_legs_on_fill ON orders;
