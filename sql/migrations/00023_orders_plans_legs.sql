-- +goose Up
-- Issue 21, cost per signal: every filled primary order called
-- plan_order_legs (00013, 00015), whose INSERT … SELECT read the intent's
-- order_spec to find that most orders have no legs at all. plans_legs says
-- whether the order's intent may carry legs; only the writer that knows the
-- order's legs (the gateway, which planned them) sets it false, so every
-- other writer keeps today's behaviour (true: the trigger looks).
ALTER TABLE orders ADD COLUMN plans_legs boolean NOT NULL DEFAULT true;

DROP TRIGGER orders_plan_legs ON orders;
CREATE TRIGGER orders_plan_legs AFTER INSERT ON orders
    FOR EACH ROW WHEN (NEW.role = 'primary' AND NEW.status = 'filled' AND NEW.plans_legs)
    EXECUTE FUNCTION plan_order_legs();

DROP TRIGGER orders_plan_legs_on_fill ON orders;
CREATE TRIGGER orders_plan_legs_on_fill AFTER UPDATE OF status ON orders
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM 'filled' AND NEW.status = 'filled' AND NEW.role = 'primary'
                       AND NEW.plans_legs)
    EXECUTE FUNCTION plan_order_legs();

-- +goose Down
DROP TRIGGER orders_plan_legs_on_fill ON orders;
CREATE TRIGGER orders_plan_legs_on_fill AFTER UPDATE OF status ON orders
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM 'filled' AND NEW.status = 'filled' AND NEW.role = 'primary')
    EXECUTE FUNCTION plan_order_legs();
DROP TRIGGER orders_plan_legs ON orders;
CREATE TRIGGER orders_plan_legs AFTER INSERT ON orders
    FOR EACH ROW WHEN (NEW.role = 'primary' AND NEW.status = 'filled') EXECUTE FUNCTION plan_order_legs();
ALTER TABLE orders DROP COLUMN plans_legs;
