-- +goose Up
-- The take-profit and stop-loss trigger prices a venue took on the order
-- itself (Bybit's takeProfit/stopLoss, OKX's attachAlgoOrds, paper): part of
-- the signal's outcome, shown beside the order. NULL when the entry carried
-- none, and on orders recorded before this column existed.
ALTER TABLE orders ADD COLUMN take_profit numeric(38,18), ADD COLUMN stop_loss numeric(38,18);
-- The paper venue's book keeps them too, so a lookup can tell whether the
-- order it holds under a client order ID carries the same exits.
ALTER TABLE paper_orders ADD COLUMN take_profit numeric(38,18), ADD COLUMN stop_loss numeric(38,18);

-- +goose Down
ALTER TABLE paper_orders DROP COLUMN take_profit, DROP COLUMN stop_loss;
ALTER TABLE orders DROP COLUMN take_profit, DROP COLUMN stop_loss;
