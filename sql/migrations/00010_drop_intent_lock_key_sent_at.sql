-- +goose NO TRANSACTION
-- +goose Up
-- Every lookup by lock key is served by the unique (lock_key, execution)
-- index (00007): the highest execution, the failed ones, and the unsettled
-- ones, of which a lock key holds a handful that the claim sorts by
-- sent_at itself (db.ClaimSQL fences that lookup so the planner cannot
-- walk the unsettled index instead, the trap 00005 fixed). The
-- (lock_key, sent_at) index cost every signal two random-key B-tree inserts
-- (the intent, and its settlement, which is not HOT) for nothing (issue 21).
DROP INDEX CONCURRENTLY IF EXISTS dispatch_intents_lock_key_sent_at_idx;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS dispatch_intents_lock_key_sent_at_idx ON dispatch_intents (lock_key, sent_at);
