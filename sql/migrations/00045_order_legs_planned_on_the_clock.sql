-- +goose Up
-- An exit leg's created_at is when hoox planned it: the fill that planned
-- it was recorded. The legs are inserted by the orders' trigger inside the
-- transaction that records the fill (a claim's, begun before its order was
-- sent; a follow look's, begun before it asked the venue), so now() — the
-- transaction's start — dated them before the fill was known. A close's
-- work after its answer takes the exit legs planned before the close's
-- intent for the closed position's (db/closed_exits.go): a long claimed
-- before the close but filled after the close read the position had its
-- take-profit and stop-loss cancelled by it. clock_timestamp() dates a leg
-- when its row is written.
ALTER TABLE order_legs ALTER COLUMN created_at SET DEFAULT clock_timestamp();

-- +goose Down
ALTER TABLE order_legs ALTER COLUMN created_at SET DEFAULT now();
