-- +goose Up
-- How many of a leg's armings (attempts) were proven never sent
-- (MarkLegUnsent: the venue was unreachable, or the arming's answer was
-- lost before the send). attempts - unsent is how many sends may have
-- reached the venue: what the leg runner's give-up (maxLegSends) counts, so
-- a venue out of reach for a while does not use up a leg's sends before
-- one has left. A constant default: no table rewrite.
ALTER TABLE order_legs ADD COLUMN unsent integer NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE order_legs DROP COLUMN unsent;
