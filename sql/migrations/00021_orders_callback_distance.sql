-- +goose Up
-- Issue 19, OKX trailing stops: the price distance a trailing stop placed as
-- its own order trails by (OKX move_order_stop's callbackSpread), as the
-- venue holds it, beside callback_rate (a percent). NULL on every other
-- order, and on a trailing stop that trails by a percent.
ALTER TABLE orders ADD COLUMN callback_distance numeric(38,18);

-- +goose Down
ALTER TABLE orders DROP COLUMN callback_distance;
