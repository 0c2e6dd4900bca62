-- +goose Up
-- Issue 21, cost per signal: every new intent went into two partial
-- indexes of open intents, unsettled_idx (sent_at, outcome null: the
-- sweeper, /readyz's state) and unrecorded_idx ((exchange, mode), outcome
-- null or reconciling: a spot close's unrecorded sells). One index of the
-- open intents serves both: the sweeper's `outcome IS NULL` implies its
-- predicate, and a spot close filters the few open intents by venue.
CREATE INDEX dispatch_intents_open_idx ON dispatch_intents (sent_at)
WHERE outcome IS NULL OR outcome = 'reconciling';
DROP INDEX dispatch_intents_unsettled_idx;
DROP INDEX dispatch_intents_unrecorded_idx;

-- +goose Down
CREATE INDEX dispatch_intents_unsettled_idx ON dispatch_intents (sent_at) WHERE outcome IS NULL;
CREATE INDEX dispatch_intents_unrecorded_idx ON dispatch_intents (exchange, mode)
WHERE outcome IS NULL OR outcome = 'reconciling';
DROP INDEX dispatch_intents_open_idx;
