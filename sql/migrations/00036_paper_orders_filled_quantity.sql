-- +goose Up
-- What a paper order executed when the venue ended it short of its
-- quantity: a reduce-only order fills at most the position left on its
-- reducing side (a plain order may have shrunk, closed or flipped the
-- position since it was placed), and the rest ends cancelled, as Binance
-- USDⓈ-M and Bybit linear end what a reduce-only order cannot reduce.
-- NULL for every other order: a filled order executed all of its quantity,
-- an open or cancelled one nothing.
ALTER TABLE paper_orders ADD COLUMN filled_quantity numeric(38,18);

-- +goose Down
-- Down, a cut order would read as having executed nothing (it is
-- cancelled), and the position from the book would be wrong by what it
-- filled; record it as a full fill of what it executed instead.
UPDATE paper_orders SET quantity = filled_quantity, status = 'filled'
WHERE filled_quantity > 0;
ALTER TABLE paper_orders DROP COLUMN filled_quantity;
