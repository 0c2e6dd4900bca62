-- +goose Up
-- Issue 21, twenty-first round: autovacuum visits the audit tables gently.
--
-- trace_events and trace_purges only grow (the audit retention, when set,
-- deletes their oldest rows once a purge). Autovacuum visits them after
-- each fifth of growth to set hint bits and the visibility map, and after
-- a restore it rewrites every page of both: about 70,000 and 35,000 pages
-- in 18 and 9 s on the benchmark machine, 30 MB/s of writes that every
-- signal's WAL flush waited behind (five of the six 50-250 ms stalls of
-- the signals in the round's first suites fell inside those two visits).
-- Nothing on these tables waits for that work, so each visit now sleeps 10 ms
-- instead of autovacuum's 2 ms after each share of its cost budget, about
-- a fifth of the pace: the same pages, spread over about five times as
-- long. trace_ids (the dedup table, whose dead rows the purge leaves)
-- keeps the server's pace.
ALTER TABLE trace_events SET (autovacuum_vacuum_cost_delay = 10);
ALTER TABLE trace_purges SET (autovacuum_vacuum_cost_delay = 10);

-- +goose Down
ALTER TABLE trace_events RESET (autovacuum_vacuum_cost_delay);
ALTER TABLE trace_purges RESET (autovacuum_vacuum_cost_delay);
