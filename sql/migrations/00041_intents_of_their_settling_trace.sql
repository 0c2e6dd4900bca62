-- +goose Up
-- A claim that settled an open intent under a trace other than the one
-- that armed it (a window-mode resend, a new trace, reconciling or adopting
-- the intent of a first arrival that died before its commit) left the
-- intent's trace_id naming a trace that never existed. A missed trade
-- there was then never asked about again (ListUnknown joins the failed
-- trace on it), every later execution read it as released by force and
-- was refused with 503 for good, and the purge did not keep its trace.
-- Claims now make the intent theirs as they settle it (RecordOrderSQL,
-- settleClaimedIntentSQL); this points the intents they left unknown or
-- reconciling at the trace that holds their outcome. An intent whose own
-- trace exists, or whose outcome no trace holds (an operator released it
-- by force), is left as it is. One scan of trace_ids, once.
UPDATE dispatch_intents i SET trace_id = t.trace_id
FROM trace_ids t
WHERE i.outcome IN ('failed', 'reconciling')
  AND t.client_order_id = i.client_order_id
  AND t.status IN ('failed', 'reconciling')
  AND t.trace_id <> i.trace_id
  AND NOT EXISTS (SELECT 1 FROM trace_ids o WHERE o.trace_id = i.trace_id);

-- +goose Down
-- Nothing to undo: the trace an intent names is the one that settled it,
-- which the code before this migration reads as well.
SELECT 1;
