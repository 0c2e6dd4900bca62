-- +goose Up
-- A sale recorded before the buy's fill it sells (a limit buy filled at
-- the venue while hoox still has it open, its follow job not yet polled;
-- then a plain sell, recorded at once) used to be clamped at zero and
-- lost: when the buy's fill was recorded, the entry rose by coins the
-- strategy had sold already, and its next close sold another strategy's.
--
-- A sell now takes the entry below zero by at most what the strategy's
-- buys recorded open have yet to fill (they may have filled at the venue
-- already, unseen): their fills, recorded later, bring it back to what
-- the strategy holds. Beyond that the entry still stops at zero, so a
-- sell of coins bought by hand (no buy of the strategy open) never leaves
-- a debt its next buy would repay. A sell never raises an entry already
-- below that bound. Readers clamp at zero (db.LockLedger, db.ListLedger):
-- a strategy holds nothing while its entry waits below zero.
ALTER TABLE spot_ledger DROP CONSTRAINT spot_ledger_quantity_check;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION spot_ledger_add(o orders, delta numeric) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    pending numeric := 0;
BEGIN
    IF o.base_asset IS NULL OR delta = 0 THEN
        RETURN;
    END IF;
    IF delta < 0 THEN
        SELECT coalesce(sum(b.quantity - coalesce(b.filled_quantity, 0)), 0) INTO pending
        FROM orders b
        WHERE b.exchange = o.exchange AND b.mode = o.mode AND b.symbol = o.symbol AND b.status = 'open'
          AND b.base_asset IS NOT NULL AND b.side = 'buy' AND coalesce(b.strategy, '') = coalesce(o.strategy, '');
    END IF;
    INSERT INTO spot_ledger AS l (exchange, mode, symbol, strategy, quantity)
    VALUES (o.exchange, o.mode, o.symbol, coalesce(o.strategy, ''), greatest(delta, -pending))
    ON CONFLICT (exchange, mode, symbol, strategy) DO UPDATE
    SET quantity = greatest(l.quantity + delta, least(l.quantity, -pending)), updated_at = now(), updated_by = 'fill';
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION spot_ledger_add(o orders, delta numeric) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF o.base_asset IS NULL OR delta = 0 THEN
        RETURN;
    END IF;
    INSERT INTO spot_ledger AS l (exchange, mode, symbol, strategy, quantity)
    VALUES (o.exchange, o.mode, o.symbol, coalesce(o.strategy, ''), greatest(delta, 0))
    ON CONFLICT (exchange, mode, symbol, strategy) DO UPDATE
    SET quantity = greatest(l.quantity + delta, 0), updated_at = now(), updated_by = 'fill';
END
$$;
-- +goose StatementEnd
UPDATE spot_ledger SET quantity = 0 WHERE quantity < 0;
ALTER TABLE spot_ledger ADD CONSTRAINT spot_ledger_quantity_check CHECK (quantity >= 0);
