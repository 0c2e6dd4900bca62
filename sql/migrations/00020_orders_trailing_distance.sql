-- +goose Up
-- Issue 19, Bybit trailing stops: the price distance a trailing stop trails
-- by, as the venue holds it (Bybit linear: the position's trailingStop, set
-- through POST /v5/position/trading-stop). NULL on every other order.
ALTER TABLE orders ADD COLUMN trailing_distance numeric(38,18);

-- +goose Down
ALTER TABLE orders DROP COLUMN trailing_distance;
