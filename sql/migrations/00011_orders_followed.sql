-- +goose Up
-- Orders are followed to their end (issue 19): a resting limit order, or a
-- market order still executing, is looked at again by a follow job until the
-- venue says it is final. What it executed is kept here: the average price
-- of its fills, the fees the venue charged (in fee_asset, the venue's own
-- commission asset), when the row last changed and when it became final.
-- cancelled_by names the trace of the `cancel` signal that cancelled it.
ALTER TABLE orders DROP CONSTRAINT orders_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_status_check
    CHECK (status IN ('filled', 'open', 'rejected', 'cancelled', 'expired'));
ALTER TABLE orders
    ADD COLUMN avg_price    numeric(38,18),
    ADD COLUMN fee          numeric(38,18),
    ADD COLUMN fee_asset    text,
    ADD COLUMN updated_at   timestamptz,
    ADD COLUMN final_at     timestamptz,
    ADD COLUMN cancelled_by text;
-- The open orders of one symbol, for the `cancel` action; small, since an
-- order leaves it when it ends.
CREATE INDEX orders_open_idx ON orders (exchange, mode, symbol) WHERE status = 'open';
CREATE INDEX orders_cancelled_by_idx ON orders (cancelled_by) WHERE cancelled_by IS NOT NULL;

-- +goose Down
DROP INDEX orders_cancelled_by_idx;
DROP INDEX orders_open_idx;
ALTER TABLE orders
    DROP COLUMN avg_price,
    DROP COLUMN fee,
    DROP COLUMN fee_asset,
    DROP COLUMN updated_at,
    DROP COLUMN final_at,
    DROP COLUMN cancelled_by;
ALTER TABLE orders DROP CONSTRAINT orders_status_check;
-- NOT VALID: rows that ended cancelled or expired keep their status.
ALTER TABLE orders ADD CONSTRAINT orders_status_check
    CHECK (status IN ('filled', 'open', 'rejected')) NOT VALID;
