-- +goose Up
-- Issue 19: a Binance spot entry's take-profit and stop-loss are one leg,
-- an OCO order list (POST /api/v3/orderList/oco), recorded as one orders
-- row with role 'oco' holding both triggers (take_profit, stop_loss).
ALTER TABLE orders DROP CONSTRAINT orders_role_check,
    ADD CONSTRAINT orders_role_check
    CHECK (role IN ('primary', 'close_part', 'take_profit', 'stop_loss', 'trailing_stop', 'oco'));

-- +goose Down
ALTER TABLE orders DROP CONSTRAINT orders_role_check,
    ADD CONSTRAINT orders_role_check
    CHECK (role IN ('primary', 'close_part', 'take_profit', 'stop_loss', 'trailing_stop')) NOT VALID;
