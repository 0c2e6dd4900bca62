-- +goose Up
-- Issue 21, the purge at scale: every session of hoox's database, and
-- autovacuum's workers when they visit it, hand what they write to the
-- kernel for write-back every 256 kB (PostgreSQL's backend_flush_after,
-- 0 = never by default), as the checkpointer and the background writer
-- already do by default on Linux.
--
-- Why: a purge of a day of traces dirties hundreds of MB of pages, and
-- autovacuum then visits the emptied tables and writes about as much
-- again. Written without a flush, those pages sat in the kernel's page
-- cache (400-800 MB dirty on the benchmark machine) until they aged out
-- and the kernel wrote them all at once, every ~30 s; each time, the
-- signals' commits waited 1-2 s for their WAL flush behind that write-back
-- (signals' p99 0.1-2 s during and after the purge). With the flush the
-- page cache held under 50 MB dirty through the same purge, and the
-- signals' p99 stayed within the goal (docs/BENCHMARKS.md, eleventh round).
--
-- Per database, so it reaches autovacuum's workers too (they read the
-- database's settings; a session setting of the purge's would not). It
-- needs the database's owner: a role that is not gets a notice and the
-- server's setting, and the operator can set it (README, deployment).
-- Sessions opened after the migration get it.
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE format('ALTER DATABASE %I SET backend_flush_after = %L', current_database(), '256kB');
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'hoox: not the owner of database %, backend_flush_after left to the server (see README, deployment)', current_database();
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE format('ALTER DATABASE %I RESET backend_flush_after', current_database());
EXCEPTION WHEN insufficient_privilege THEN
    NULL;
END
$$;
-- +goose StatementEnd
