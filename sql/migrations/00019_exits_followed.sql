-- +goose Up
-- Issue 19, exits followed to their end: a recorded exit leg (Binance
-- USDⓈ-M take-profit / stop-loss / trailing stop algo order, Binance spot
-- OCO list) is followed like any open order. Two facts the row did not
-- hold yet:
--   executed_exit: for an OCO list (role 'oco'), which of its two orders
--     executed ('take_profit', or 'stop_loss' / 'trailing_stop' for its
--     stop order); the other one was expired by the venue. NULL until one did, and on every other order.
--   unfollowed_at: when hoox stopped following an exit that was still
--     open at its follow horizon (the row keeps its last known state).
ALTER TABLE orders ADD COLUMN executed_exit text
    CHECK (executed_exit IN ('take_profit', 'stop_loss', 'trailing_stop'));
ALTER TABLE orders ADD COLUMN unfollowed_at timestamptz;

-- +goose Down
ALTER TABLE orders DROP COLUMN unfollowed_at;
ALTER TABLE orders DROP COLUMN executed_exit;
