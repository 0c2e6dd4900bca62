-- +goose Up
-- Issue 21, cost per signal: a new signal wrote three audit rows, of which
-- `received` says nothing the trace row does not (its time, source IP,
-- fingerprint and key source). It is now presented by a view over the
-- trace row while the trace lives, and written out as a row when the trace
-- is deleted (the purge and an admin release write it in the statement
-- that deletes the trace, under the id the claim gave it), so every audit
-- query reads the same before and after.
--
-- trace_events keeps its name, as a view: the rows are in trace_event_rows
-- (the table renamed, indexes and identity sequence trace_events_id_seq
-- unchanged), and the trace's virtual `received` event is
-- (received_event_id, received_at). Only the claim sets received_event_id
-- (from the events' own sequence, so ORDER BY at, id orders as before);
-- every other writer of trace rows (the sweeper, tests, a restore) leaves
-- it null and writes its own rows as before. An INSERT into the view goes
-- to the table (the rule); DELETE and UPDATE go to trace_event_rows.
-- A trace row deleted by hand (not by the purge or a release) takes its
-- `received` event with it.
ALTER TABLE trace_events RENAME TO trace_event_rows;
ALTER TABLE trace_ids ADD COLUMN received_event_id bigint;
CREATE VIEW trace_events AS
SELECT e.id, e.trace_id, e.event, e.at, e.source_ip, e.detail FROM trace_event_rows e
UNION ALL
SELECT t.received_event_id, t.trace_id, 'received', t.received_at, t.source_ip,
       jsonb_build_object('fingerprint', t.fingerprint, 'key_source', t.key_source)
FROM trace_ids t WHERE t.received_event_id IS NOT NULL;
ALTER VIEW trace_events ALTER COLUMN at SET DEFAULT clock_timestamp();
ALTER VIEW trace_events ALTER COLUMN detail SET DEFAULT '{}'::jsonb;
CREATE RULE trace_events_insert AS ON INSERT TO trace_events DO INSTEAD
    INSERT INTO trace_event_rows (trace_id, event, at, source_ip, detail)
    VALUES (NEW.trace_id, NEW.event, NEW.at, NEW.source_ip, NEW.detail)
    RETURNING id, trace_id, event, at, source_ip, detail;

-- +goose Down
DROP VIEW trace_events;
INSERT INTO trace_event_rows (id, trace_id, event, at, source_ip, detail) OVERRIDING SYSTEM VALUE
SELECT t.received_event_id, t.trace_id, 'received', t.received_at, t.source_ip,
       jsonb_build_object('fingerprint', t.fingerprint, 'key_source', t.key_source)
FROM trace_ids t WHERE t.received_event_id IS NOT NULL;
ALTER TABLE trace_ids DROP COLUMN received_event_id;
ALTER TABLE trace_event_rows RENAME TO trace_events;
