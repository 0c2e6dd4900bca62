-- +goose Up
-- Issue 21, the closed loop's decline: how often autovacuum visits the
-- tables every signal writes, and what its ANALYZE reads there.
--
-- Postgres analyses a table once 50 rows plus 10 % of it changed, and
-- vacuums an insert-mostly one once 1,000 rows plus 20 % were inserted.
-- On a young table that is constantly: at 1,500 signals a second a table
-- of 100,000 rows was analysed every 7 s, each ANALYZE of trace_ids or
-- dispatch_intents cost 0.5-0.8 s of CPU, and every analyse or vacuum
-- changes the table's pg_class row, which makes every connection of every
-- replica plan its cached statements over that table again (invalidating
-- the five tables' cache entries twice a second cost the closed loop
-- 13-16 %). The benchmark's closed loop fell by a fifth in the rounds that
-- autovacuum visited (docs/BENCHMARKS.md, twelfth round).
--
-- 1. The first analyse or insert-driven vacuum of these tables waits for
--    100,000 changed rows (dead rows: 10,000), then the scale factors
--    take over as before: a table of a million rows and more is visited
--    exactly as often as with the defaults. The planner reads a table
--    never analysed by its size on disk (the fresh-database test:
--    gateway.TestAFreshDatabaseLooksSignalsUpByKey), which is also what
--    keeps a table analysed while tiny from planning sequential scans.
-- 2. ANALYZE skips the payload columns no query filters, joins or groups
--    on (the signal and order as sent, source IPs, signal times, detail,
--    prices): half of what it cost on trace_ids and dispatch_intents was
--    their JSON. Queries on them still run; the planner uses its default
--    estimates for them.
ALTER TABLE trace_ids SET (autovacuum_analyze_threshold = 100000, autovacuum_vacuum_insert_threshold = 100000,
                           autovacuum_vacuum_threshold = 10000);
ALTER TABLE dispatch_intents SET (autovacuum_analyze_threshold = 100000, autovacuum_vacuum_insert_threshold = 100000,
                                  autovacuum_vacuum_threshold = 10000);
ALTER TABLE trace_events SET (autovacuum_analyze_threshold = 100000, autovacuum_vacuum_insert_threshold = 100000,
                              autovacuum_vacuum_threshold = 10000);
ALTER TABLE orders SET (autovacuum_analyze_threshold = 100000, autovacuum_vacuum_insert_threshold = 100000,
                        autovacuum_vacuum_threshold = 10000);
ALTER TABLE paper_orders SET (autovacuum_analyze_threshold = 100000, autovacuum_vacuum_insert_threshold = 100000,
                              autovacuum_vacuum_threshold = 10000);

ALTER TABLE trace_ids ALTER COLUMN signal SET STATISTICS 0,
                      ALTER COLUMN source_ip SET STATISTICS 0,
                      ALTER COLUMN signal_time SET STATISTICS 0;
ALTER TABLE dispatch_intents ALTER COLUMN order_spec SET STATISTICS 0,
                             ALTER COLUMN signal SET STATISTICS 0,
                             ALTER COLUMN source_ip SET STATISTICS 0,
                             ALTER COLUMN signal_time SET STATISTICS 0,
                             ALTER COLUMN attempts SET STATISTICS 0;
ALTER TABLE trace_events ALTER COLUMN source_ip SET STATISTICS 0,
                         ALTER COLUMN detail SET STATISTICS 0;
ALTER TABLE orders ALTER COLUMN fill_price SET STATISTICS 0,
                   ALTER COLUMN avg_price SET STATISTICS 0,
                   ALTER COLUMN fee SET STATISTICS 0,
                   ALTER COLUMN take_profit SET STATISTICS 0,
                   ALTER COLUMN stop_loss SET STATISTICS 0,
                   ALTER COLUMN callback_rate SET STATISTICS 0,
                   ALTER COLUMN trailing_distance SET STATISTICS 0;
ALTER TABLE paper_orders ALTER COLUMN quantity SET STATISTICS 0,
                         ALTER COLUMN price SET STATISTICS 0,
                         ALTER COLUMN fill_price SET STATISTICS 0,
                         ALTER COLUMN take_profit SET STATISTICS 0,
                         ALTER COLUMN stop_loss SET STATISTICS 0;

-- +goose Down
ALTER TABLE trace_ids RESET (autovacuum_analyze_threshold, autovacuum_vacuum_insert_threshold, autovacuum_vacuum_threshold);
ALTER TABLE dispatch_intents RESET (autovacuum_analyze_threshold, autovacuum_vacuum_insert_threshold, autovacuum_vacuum_threshold);
ALTER TABLE trace_events RESET (autovacuum_analyze_threshold, autovacuum_vacuum_insert_threshold, autovacuum_vacuum_threshold);
ALTER TABLE orders RESET (autovacuum_analyze_threshold, autovacuum_vacuum_insert_threshold, autovacuum_vacuum_threshold);
ALTER TABLE paper_orders RESET (autovacuum_analyze_threshold, autovacuum_vacuum_insert_threshold, autovacuum_vacuum_threshold);

ALTER TABLE trace_ids ALTER COLUMN signal SET STATISTICS -1,
                      ALTER COLUMN source_ip SET STATISTICS -1,
                      ALTER COLUMN signal_time SET STATISTICS -1;
ALTER TABLE dispatch_intents ALTER COLUMN order_spec SET STATISTICS -1,
                             ALTER COLUMN signal SET STATISTICS -1,
                             ALTER COLUMN source_ip SET STATISTICS -1,
                             ALTER COLUMN signal_time SET STATISTICS -1,
                             ALTER COLUMN attempts SET STATISTICS -1;
ALTER TABLE trace_events ALTER COLUMN source_ip SET STATISTICS -1,
                         ALTER COLUMN detail SET STATISTICS -1;
ALTER TABLE orders ALTER COLUMN fill_price SET STATISTICS -1,
                   ALTER COLUMN avg_price SET STATISTICS -1,
                   ALTER COLUMN fee SET STATISTICS -1,
                   ALTER COLUMN take_profit SET STATISTICS -1,
                   ALTER COLUMN stop_loss SET STATISTICS -1,
                   ALTER COLUMN callback_rate SET STATISTICS -1,
                   ALTER COLUMN trailing_distance SET STATISTICS -1;
ALTER TABLE paper_orders ALTER COLUMN quantity SET STATISTICS -1,
                         ALTER COLUMN price SET STATISTICS -1,
                         ALTER COLUMN fill_price SET STATISTICS -1,
                         ALTER COLUMN take_profit SET STATISTICS -1,
                         ALTER COLUMN stop_loss SET STATISTICS -1;
