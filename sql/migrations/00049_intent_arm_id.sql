-- +goose Up
-- Each arming of an intent carries an ID of its own (db.Intent.ArmID), so
-- an attempt that settles "its" arming unsent after a write whose outcome
-- it cannot know settles nothing but its own. The attempts count did not
-- tell two attempts apart that read the intent armed the same number of
-- times: one whose claim's lock was lost, and the one that claimed next.
-- If the first committed its arming and sent the order, and the second's
-- write failed on a broken connection, the second settled the first's
-- arming unsent, and the sender's retry sent the same client order ID
-- again: at a venue that refuses a client order ID only while its first
-- order is open (Binance), a second fill (torture seed 230601).
-- A nullable column with no default: no rewrite, and rows armed before it
-- keep NULL, which no settlement names.
-- A leg's arming (order_legs, db.MarkLegSent and MarkLegUnsent) had the
-- same flaw and gets the same column: a pass whose arming failed with its
-- outcome unknown cleared the send of the pass that took the lock it lost,
-- and the next pass sent that leg again without a lookup.
ALTER TABLE dispatch_intents ADD COLUMN arm_id bigint;
ALTER TABLE order_legs ADD COLUMN arm_id bigint;

-- +goose Down
ALTER TABLE order_legs DROP COLUMN arm_id;
ALTER TABLE dispatch_intents DROP COLUMN arm_id;
