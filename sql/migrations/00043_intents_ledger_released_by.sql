-- +goose Up
-- ledger_released_by names who ended the reservation of this intent's
-- sell in its strategy's spot ledger entry. A spot sell whose intent ended
-- failed with its order unknown (a missed trade, a reconcile given up)
-- counts as sold in its entry, so a later close does not sell its coins
-- again, until it is decided — found and recorded, proven absent — or an
-- operator, having checked the venue, sets the entry (db.SetLedger, which
-- marks it with the operator). Nullable, no default: no table rewrite.
ALTER TABLE dispatch_intents ADD COLUMN ledger_released_by text;

-- The failed spot sells already here were never counted as sold, and
-- operators have corrected their entries by hand since (README's former
-- "an operator corrects the entry"): counted from now on, they would make
-- every later close of their strategies short by them at once. They keep
-- the rule they were settled under. Read through dispatch_intents_unknown_idx.
UPDATE dispatch_intents SET ledger_released_by = 'migration 00043'
WHERE outcome = 'failed' AND order_spec->>'Side' = 'sell' AND jsonb_typeof(order_spec->'Ledger') = 'object';

-- +goose Down
ALTER TABLE dispatch_intents DROP COLUMN ledger_released_by;
