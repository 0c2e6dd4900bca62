-- +goose Up
-- Issue 21, thirteenth round: what autovacuum's ANALYZE reads on the
-- tables every signal writes.
--
-- ANALYZE was 70 % of autovacuum's CPU on these tables (its log, a
-- 150-s closed loop: dispatch_intents 0.78 s a visit, trace_ids
-- 0.31-0.40, orders 0.29-0.31, trace_events 0.23-0.25, paper_orders
-- 0.14-0.16; their vacuums 0.01-0.43 s), and half of it on trace_ids
-- and dispatch_intents was their JSON. ANALYZE now skips the payload
-- columns no query filters, joins or groups on (the signal and order as
-- sent, source IPs, signal times, detail, prices). Queries on them still
-- run; the planner uses its default estimates for them.
--
-- The twelfth round tried this together with higher autovacuum
-- thresholds for young tables (100,000 changed rows before the first
-- visit) and reverted both: the purge got slower. This migration is the
-- statistics part alone; when autovacuum visits is Postgres's default.
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
