-- +goose Up
-- Issue 19, trailing stops: the rate in percent a trailing stop placed as its
-- own order trails by (Binance USDⓈ-M TRAILING_STOP_MARKET's callbackRate), as
-- the venue holds it; shown beside the entry like a take-profit's trigger.
-- NULL on every other order.
ALTER TABLE orders ADD COLUMN callback_rate numeric(38,18);

-- +goose Down
ALTER TABLE orders DROP COLUMN callback_rate;
