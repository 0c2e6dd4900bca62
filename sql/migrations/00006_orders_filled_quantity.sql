-- +goose Up
-- What the venue executed, apart from what was sent (quantity): a market
-- order that expired after a partial fill is filled, for less. NULL on
-- orders recorded before this column existed.
ALTER TABLE orders ADD COLUMN filled_quantity numeric(38,18);

-- +goose Down
ALTER TABLE orders DROP COLUMN filled_quantity;
