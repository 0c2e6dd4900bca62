-- +goose Up
-- asked_at is when the venue last answered an ask about an order whose
-- existence stays unknown (a missed trade, a missed leg, a dead Bybit
-- attempt's intent left open for the resend) without deciding it. The
-- sweeper spaces its asks by how long the venue has been answering "not
-- there" (db.intentUnknownDue); an ask the venue did not answer (an outage)
-- does not set it, so the first ask after an outage is never held back.
-- Cleared when the intent or leg is armed (sent) again. Nullable, no
-- default: no table rewrite.
ALTER TABLE dispatch_intents ADD COLUMN asked_at timestamptz;
ALTER TABLE order_legs ADD COLUMN asked_at timestamptz;

-- +goose Down
ALTER TABLE order_legs DROP COLUMN asked_at;
ALTER TABLE dispatch_intents DROP COLUMN asked_at;
