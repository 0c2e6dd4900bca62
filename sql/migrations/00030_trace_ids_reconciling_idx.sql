-- +goose Up
-- Issue 21, the purge at scale: the sweeper (every HOOX_SWEEP_INTERVAL) and
-- every /metrics scrape looked for reconciling traces with
-- `status = 'reconciling'`, which no index answers: a sequential scan of
-- the whole of trace_ids (a day of signals, hundreds of MB at a million
-- traces) each time. Inside a purge those scans read the table from disk
-- while the purge's writes were being flushed, and the signals' own reads
-- and commits queued behind them (p99 of 0.3–1.7 s in the benchmark).
--
-- An index that names `status` (as a key or in its predicate) would cost
-- every signal more than the scans do: PostgreSQL 15 updates a row in
-- place (HOT, no index entries) only when no indexed column changes, and
-- every settlement changes the status (claimed → dispatched). So the
-- reconciling traces get a column of their own, generated from the row:
-- the time the trace was last touched while reconciling, null otherwise.
-- A settlement from claimed to dispatched leaves it null, the value the
-- HOT check compares, so settlements stay HOT; only a trace entering or
-- leaving reconciling (rare) touches the index. No writer sets it, so it
-- cannot drift from the status, and replicas still on the previous
-- release write rows that hold it too.
--
-- Adding a stored generated column rewrites trace_ids and its indexes
-- under an exclusive lock: signals wait (or get 503 after HOOX_LOCK_WAIT)
-- for as long as it takes. On the benchmark machine, 1.0 M traces (293 MB):
-- the rewrite 5.8 s, the index 0.2 s, the ANALYZE 0.6 s.
ALTER TABLE trace_ids ADD COLUMN reconciling_since timestamptz
    GENERATED ALWAYS AS (CASE WHEN status = 'reconciling' THEN updated_at END) STORED;
CREATE INDEX trace_ids_reconciling_idx ON trace_ids (reconciling_since) WHERE reconciling_since IS NOT NULL;
-- The planner needs to know the new column is almost always null to prefer
-- the index; autovacuum's next ANALYZE would tell it, this one tells it now.
-- Only when there are rows to count: an ANALYZE of an empty table records
-- "0 rows" where there were no statistics at all, and the planner then sizes
-- the table by its few pages instead of its floor of ten for a table never
-- analysed. Every connection's first plans of the hot statements (kept for
-- the connection's life as generic plans) then chose sequential scans of
-- trace_ids for its primary-key lookups, and kept them while the table grew
-- until autovacuum's first ANALYZE: every signal of a fresh deployment's
-- first minute read the whole table, twice.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM trace_ids) THEN
        ANALYZE trace_ids;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP INDEX trace_ids_reconciling_idx;
ALTER TABLE trace_ids DROP COLUMN reconciling_since;
