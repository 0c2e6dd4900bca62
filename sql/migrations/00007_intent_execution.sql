-- +goose Up
-- Which execution of its lock key an intent is: the n its client order ID
-- was derived from. The next execution takes the highest n plus one, so the
-- number only grows — a count of "used" intents went down when a late
-- reconcile settled a counted intent as not_placed, and the next execution
-- then derived an ID another intent had already consumed (refused for good).
--
-- Back-fill: the existing intents of a lock key are numbered 0, 1, … in
-- the order they were last sent. Every n derived so far was a count of
-- other intents of the same lock key, so it is below their number; the
-- next execution (the highest number plus one) therefore never derives an
-- ID that was used before.
ALTER TABLE dispatch_intents ADD COLUMN execution integer;
UPDATE dispatch_intents i SET execution = r.n
FROM (SELECT client_order_id,
             row_number() OVER (PARTITION BY lock_key ORDER BY sent_at, client_order_id) - 1 AS n
      FROM dispatch_intents) r
WHERE r.client_order_id = i.client_order_id;
ALTER TABLE dispatch_intents ALTER COLUMN execution SET NOT NULL;
-- One intent per execution of a lock key; the claim reads the highest.
CREATE UNIQUE INDEX dispatch_intents_lock_key_execution_idx ON dispatch_intents (lock_key, execution);

-- +goose Down
DROP INDEX dispatch_intents_lock_key_execution_idx;
ALTER TABLE dispatch_intents DROP COLUMN execution;
