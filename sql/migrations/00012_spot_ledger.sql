-- +goose Up
-- The spot ledger (issue 19): for each venue (as the trace records it),
-- mode, symbol and strategy, the base quantity the strategy holds through
-- hoox. A spot close sells min(this, the free balance), never coins the
-- strategy did not buy (fee coins, manual holdings).
--
-- An order counts in the ledger when it was recorded with a base_asset:
-- the gateway sets it (with the signal's strategy) for spot venues only,
-- in the intent, so every path that records the order (the gateway, an
-- adoption, the reconcile job, the sweeper) writes the same row.
ALTER TABLE orders ADD COLUMN strategy   text;
ALTER TABLE orders ADD COLUMN base_asset text;
-- The venue's fee for the order and the asset it was charged in (Binance
-- spot fills[].commission/commissionAsset, Bybit cumExecFee, OKX
-- fee/feeCcy). IF NOT EXISTS: the order-following work adds the same
-- columns; whichever migration runs first creates them.
ALTER TABLE orders ADD COLUMN IF NOT EXISTS fee       numeric(38,18);
ALTER TABLE orders ADD COLUMN IF NOT EXISTS fee_asset text;

CREATE TABLE spot_ledger (
    exchange   text           NOT NULL,
    mode       text           NOT NULL CHECK (mode IN ('live', 'test')),
    symbol     text           NOT NULL,
    strategy   text           NOT NULL,
    quantity   numeric(38,18) NOT NULL CHECK (quantity >= 0),
    updated_at timestamptz    NOT NULL DEFAULT now(),
    -- 'fill' when an order's fill last moved it, else the admin's name.
    updated_by text           NOT NULL DEFAULT 'fill',
    PRIMARY KEY (exchange, mode, symbol, strategy)
);

-- What one orders row holds for the ledger: the base quantity it moved
-- into (+) or out of (-) the account. A buy adds what was received, net
-- of a fee charged in the base asset; a sell takes away what was sold
-- (and a fee charged in the base asset). Zero for an order outside the
-- ledger (derivatives, paper) and for one that filled nothing.
-- +goose StatementBegin
CREATE FUNCTION spot_ledger_moved(side text, base_asset text, filled numeric, fee numeric, fee_asset text)
RETURNS numeric LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN base_asset IS NULL OR side IS NULL THEN 0
        ELSE (CASE side WHEN 'buy' THEN 1 ELSE -1 END) * coalesce(filled, 0)
             - CASE WHEN upper(fee_asset) = upper(base_asset) THEN coalesce(fee, 0) ELSE 0 END
    END
$$;
-- +goose StatementEnd

-- The one place every fill passes through: whichever code writes or
-- updates an order row (the gateway's record, an adoption, the reconcile
-- job, the sweeper, a job following an open order to its fills), the
-- ledger moves by the difference between what the row held before and
-- what it holds now — so a fill is counted once, however many paths
-- see it. The upsert takes the ledger row's lock, so two signals of one
-- strategy recorded at once both count (no lost update). A sell never
-- takes the ledger below zero: the strategy cannot hold less than
-- nothing, and a sell of coins it never bought through hoox is not its
-- business.
-- +goose StatementBegin
CREATE FUNCTION spot_ledger_apply() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    delta numeric := spot_ledger_moved(NEW.side, NEW.base_asset, NEW.filled_quantity, NEW.fee, NEW.fee_asset);
BEGIN
    IF TG_OP = 'UPDATE' THEN
        delta := delta - spot_ledger_moved(OLD.side, OLD.base_asset, OLD.filled_quantity, OLD.fee, OLD.fee_asset);
    END IF;
    IF NEW.base_asset IS NULL OR delta = 0 THEN
        RETURN NULL;
    END IF;
    INSERT INTO spot_ledger AS l (exchange, mode, symbol, strategy, quantity)
    VALUES (NEW.exchange, NEW.mode, NEW.symbol, coalesce(NEW.strategy, ''), greatest(delta, 0))
    ON CONFLICT (exchange, mode, symbol, strategy) DO UPDATE
    SET quantity = greatest(l.quantity + delta, 0), updated_at = now(), updated_by = 'fill';
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER orders_spot_ledger
AFTER INSERT OR UPDATE OF side, base_asset, filled_quantity, fee, fee_asset ON orders
-- Only spot rows move a ledger: every other order (derivatives, paper)
-- skips the function call altogether (issue 21: cost per signal).
FOR EACH ROW WHEN (NEW.base_asset IS NOT NULL) EXECUTE FUNCTION spot_ledger_apply();

-- A spot close subtracts the sells of the same holding that were sent but
-- are not recorded yet (an attempt that died, an answer lost): they may
-- have sold coins the ledger still counts. This finds them without a scan
-- of every intent ever written.
CREATE INDEX dispatch_intents_unrecorded_idx ON dispatch_intents (exchange, mode)
WHERE outcome IS NULL OR outcome = 'reconciling';

-- +goose Down
DROP INDEX dispatch_intents_unrecorded_idx;
DROP TRIGGER orders_spot_ledger ON orders;
DROP FUNCTION spot_ledger_apply();
DROP FUNCTION spot_ledger_moved(text, text, numeric, numeric, text);
DROP TABLE spot_ledger;
ALTER TABLE orders DROP COLUMN base_asset;
ALTER TABLE orders DROP COLUMN strategy;
-- fee and fee_asset stay: the order-following migration (00011) may own
-- them, and dropping them here would take its data.
