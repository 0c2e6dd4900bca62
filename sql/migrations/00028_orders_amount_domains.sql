-- +goose Up
-- Issue 21, cost per signal: orders_amounts_check (00024) was the last
-- table CHECK on the signal's path, and Postgres reads a table's checks back
-- from their stored text and compiles them in every statement that writes a
-- row: about 10 % of the settlement statement. As domains (00024's reasoning)
-- the same limits are compiled once per connection. A NULL price or
-- leverage passes, as it passed the check.
CREATE DOMAIN hoox_amount AS numeric(38,18) CONSTRAINT hoox_amount_check CHECK (VALUE > 0);
CREATE DOMAIN hoox_leverage AS integer CONSTRAINT hoox_leverage_check CHECK (VALUE BETWEEN 1 AND 125);
ALTER TABLE orders
    DROP CONSTRAINT orders_amounts_check,
    ALTER COLUMN quantity TYPE hoox_amount, ALTER COLUMN price TYPE hoox_amount,
    ALTER COLUMN leverage TYPE hoox_leverage;

-- +goose Down
ALTER TABLE orders
    ALTER COLUMN quantity TYPE numeric(38,18), ALTER COLUMN price TYPE numeric(38,18), ALTER COLUMN leverage TYPE integer,
    ADD CONSTRAINT orders_amounts_check CHECK (quantity > 0 AND price > 0 AND leverage BETWEEN 1 AND 125);
DROP DOMAIN hoox_leverage, hoox_amount;
