-- +goose Up
-- The sweeper re-asks the venue about intents whose order's existence is
-- unknown (outcome failed), the least recently asked first; intents are
-- never purged, so this keeps that pass off a scan of all of them.
CREATE INDEX dispatch_intents_unknown_idx ON dispatch_intents (settled_at) WHERE outcome = 'failed';

-- +goose Down
DROP INDEX dispatch_intents_unknown_idx;
