-- +goose Up
-- The sweeper asks the venue again about legs whose order's existence is
-- unknown (outcome failed: sent, never seen, at a venue that may fill a
-- late request), the least recently asked first; settled_at is refreshed
-- on each ask that decides nothing. Legs are never purged, so this keeps
-- that pass off a scan of all of them (as dispatch_intents_unknown_idx,
-- migration 00009, does for the primaries' intents).
CREATE INDEX order_legs_unknown_idx ON order_legs (settled_at) WHERE outcome = 'failed';

-- +goose Down
DROP INDEX order_legs_unknown_idx;
