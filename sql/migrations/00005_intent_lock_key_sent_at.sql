-- +goose Up
-- The claim looks for an unsettled intent under the signal's lock key, the
-- oldest first. With only (lock_key) the planner walked the partial
-- unsettled index in sent_at order and filtered on the lock key: a claim
-- then cost as much as there were unsettled intents (crash leftovers
-- before the sweeper's pass, a benchmark that never settles). (lock_key,
-- sent_at) answers it from the lock key's own few rows, in order, and
-- serves the execution count as before.
CREATE INDEX dispatch_intents_lock_key_sent_at_idx ON dispatch_intents (lock_key, sent_at);
DROP INDEX dispatch_intents_lock_key_idx;

-- +goose Down
CREATE INDEX dispatch_intents_lock_key_idx ON dispatch_intents (lock_key);
DROP INDEX dispatch_intents_lock_key_sent_at_idx;
