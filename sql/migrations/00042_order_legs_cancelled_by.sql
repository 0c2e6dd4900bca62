-- +goose Up
-- cancelled_by names the cancel signal's trace that came while the exit leg
-- may have been sent (armed) or was failed with its order unknown (given
-- up during an outage, missed): a cancel leaves no hoox order of its symbol
-- resting, so the leg runner never sends such a leg again — it only looks
-- it up and cancels it at the venue if found — and the sweeper never opens
-- it again (AskUnknown). Nullable, no default: no table rewrite.
ALTER TABLE order_legs ADD COLUMN cancelled_by text;

-- +goose Down
ALTER TABLE order_legs DROP COLUMN cancelled_by;
