-- +goose Up
-- ledger_released_by names the operator whose change of a spot ledger
-- entry (PUT /admin/ledger) ended the reservation of this intent's sell: a
-- spot sell that ended failed with its order unknown (a missed trade, a
-- reconcile given up) counts as sold in its strategy's entry, so a later
-- close does not sell its coins again, until it is decided — found and
-- recorded, proven absent — or an operator, having checked the venue, sets
-- the entry (db.SetLedger). Nullable, no default: no table rewrite.
ALTER TABLE dispatch_intents ADD COLUMN ledger_released_by text;

-- +goose Down
ALTER TABLE dispatch_intents DROP COLUMN ledger_released_by;
