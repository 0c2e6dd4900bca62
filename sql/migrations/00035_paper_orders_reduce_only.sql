-- +goose Up
-- The paper venue's reducing orders (close, close_long, close_short, a
-- reduce-only order) are marked, so that a close placed while another
-- rests unfilled is checked against the position less what the resting
-- ones will take: a resting limit close reserves its quantity, and a
-- later close cannot sell the same long again and, once the price crosses
-- the resting one, flip the position. Rows before this migration read as
-- not reducing.
ALTER TABLE paper_orders ADD COLUMN reduce_only boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE paper_orders DROP COLUMN reduce_only;
