package db

import "github.com/hoox/hoox/exchange"

// TraceStatus is where a trace stands, as trace_ids.status stores it. A
// trace is claimed while its first attempt runs; the other four are what
// operators see.
type TraceStatus string

// The trace statuses.
const (
	TraceClaimed     TraceStatus = "claimed"
	TraceDispatched  TraceStatus = "dispatched"
	TraceRejected    TraceStatus = "rejected"
	TraceReconciling TraceStatus = "reconciling"
	TraceFailed      TraceStatus = "failed"
)

// TraceSuperseded is not stored: Reconcile returns it for a trace that is
// reconciling under another client order ID than the resolution's (a
// later execution's).
const TraceSuperseded TraceStatus = "superseded"

// TraceStatuses lists every trace status in lifecycle order, for filters
// that accept one.
func TraceStatuses() []TraceStatus {
	return []TraceStatus{TraceClaimed, TraceDispatched, TraceRejected, TraceReconciling, TraceFailed}
}

// Settled reports whether a trace in status s is final: its row never
// changes again until a release or the purge deletes it (ClaimLockSQL lets
// a repeat of it skip the lock).
func (s TraceStatus) Settled() bool {
	return s == TraceDispatched || s == TraceRejected || s == TraceFailed
}

// Releasable reports whether an operator may release a trace in status s
// (ReleaseTrace): every status but reconciling, whose order may exist at
// the venue, so freeing its key would let a resend place a second one.
func (s TraceStatus) Releasable() bool { return s != TraceReconciling }

// IntentOutcome is how a dispatch intent was settled. An intent with no
// outcome is an attempt that may have reached its venue and was never
// recorded.
type IntentOutcome string

// The intent outcomes.
const (
	IntentDispatched  IntentOutcome = "dispatched"  // the order is recorded
	IntentRejected    IntentOutcome = "rejected"    // the venue (or its filters) refused it; recorded
	IntentReconciling IntentOutcome = "reconciling" // the answer was lost; a reconcile job owns it
	IntentUnsent      IntentOutcome = "unsent"      // provably never sent; the ID may be used again
	IntentNotPlaced   IntentOutcome = "not_placed"  // the venue holds nothing and its window has closed
	IntentKeyReused   IntentOutcome = "key_reused"  // the venue holds a different order under the ID
	IntentFailed      IntentOutcome = "failed"      // gave up; an operator must check the venue
)

// Audit event names (trace_history.event) that Go code writes; the purge
// ('purged', a trace_purges row), a release ('released') and the kill switch
// ('kill_switch_engaged', 'kill_switch_released') write theirs in SQL.
const (
	EventReceived        = "received"
	EventDuplicate       = "duplicate"
	EventKeyReused       = "key_reused"
	EventDispatchStarted = "dispatch_started"
	EventDispatchAborted = "dispatch_aborted"
	EventAdopted         = "adopted"
	EventDispatched      = "dispatched"
	EventRejected        = "rejected"
	EventReconciling     = "reconciling"
	EventReconciled      = "reconciled"
	EventSwept           = "swept"
	EventFailed          = "failed"
	// A leg's events (issue 19): its send began (its intent is durable),
	// its order was recorded (placed or adopted; or refused), or it ended
	// without one (absent where the venue may fill late, another order
	// under its ID). Each names the leg's client_order_id and role.
	EventLegStarted  = "leg_started"
	EventLegPlaced   = "leg_placed"
	EventLegRejected = "leg_rejected"
	EventLegFailed   = "leg_failed"
	// EventLegReopened: a leg given up while its venue could not be asked
	// is open again, to be sent under its ID (LegsTx.Reopen).
	EventLegReopened = "leg_reopened"
	// EventLegCancelled: a cancel signal (MarkCancelledExitLegs), or a
	// close that left the position gone (MarkClosedExitLegs), came while
	// an exit leg may have been sent or was failed with its order
	// unknown; it is never sent again, and cancelled at the venue if
	// found.
	EventLegCancelled = "leg_cancelled"
)

// Recorded is what an order the venue holds (or refused) makes of its
// trace: the one mapping from a venue report to the trace's status, the
// intent's outcome and the event's detail, shared by the gateway, the
// reconcile and the sweeper so an order looks the same however it was
// found.
type Recorded struct {
	Order         *OrderRow
	Status        TraceStatus
	IntentOutcome IntentOutcome
	// Detail is the audit event's detail: the order, its client order ID
	// and status, what the signal asked (asked_quantity, and asked_price
	// when it gave one: the order row holds what was sent, rounded to the
	// venue's steps), and the venue's reason when it gave one. Callers add
	// their own keys (adopted, placed, found, …).
	Detail map[string]any
}

// RecordReport builds the order row for o as the venue reported it (see
// NewOrderRow) and says how it settles the trace: dispatched, or rejected
// when the venue refused the order.
func RecordReport(traceID, exchangeName, mode string, o exchange.Order, r exchange.Report) Recorded {
	row := NewOrderRow(traceID, exchangeName, mode, o, r)
	rec := Recorded{Order: row, Status: TraceDispatched, IntentOutcome: IntentDispatched,
		Detail: map[string]any{"order_id": row.ID, "client_order_id": row.ClientOrderID, "order_status": row.Status,
			"asked_quantity": o.Quantity.String()}}
	if o.Price.Valid {
		rec.Detail["asked_price"] = o.Price.Decimal.String()
	}
	if o.Sizing != nil {
		// Why this size: the venue's price, balance or position read
		// before the intent, and the rounding applied.
		rec.Detail["sizing"] = o.Sizing
	}
	if o.Split != nil {
		// Why several orders: the position read before the intent, the
		// venue's maximum market quantity and the parts planned.
		rec.Detail["split"] = o.Split
	}
	if o.ExitCaps != nil {
		// Why the exits were taken: the venue's cap on resting exit
		// orders and how many were open, read before the intent.
		rec.Detail["exit_caps"] = o.ExitCaps
	}
	if o.HasAttachments() {
		// The exits as sent: what was asked (a percent) and what it was
		// resolved to, from which price, once, before the intent.
		rec.Detail["attached"] = attachedDetail(o)
	}
	if r.Status == exchange.StatusRejected {
		rec.Status, rec.IntentOutcome = TraceRejected, IntentRejected
	}
	if r.Reason != "" {
		rec.Detail["reason"] = r.Reason
	}
	if len(r.CancelledFirst) > 0 {
		// The resting orders cancelled so the close could go through
		// (Binance -2022).
		rec.Detail["cancelled_first"] = r.CancelledFirst
	}
	if r.PositionClosed {
		// The venue read flat after the close: the settings held on the
		// position (a Bybit trailing stop) ended with it
		// (PositionClosedSince).
		rec.Detail["position_closed"] = true
	}
	return rec
}

// attachedDetail lists o's attached exits for an audit event: role,
// trigger price (or trailing distance), and the percent and reference
// price it was resolved from when the signal gave a percentage.
func attachedDetail(o exchange.Order) []map[string]string {
	var out []map[string]string
	for _, r := range o.Attachments() {
		m := map[string]string{"role": r.Role}
		a := r.Attached
		if a.Price.Valid {
			m["trigger_price"] = a.Price.Decimal.String()
		}
		if a.Distance.Valid {
			m["distance"] = a.Distance.Decimal.String()
		}
		if a.Percent.Valid {
			m["percent"] = a.Percent.Decimal.String()
		}
		if a.From.Valid {
			m["from_price"] = a.From.Decimal.String()
		}
		out = append(out, m)
	}
	return out
}

// exitRolesSQL is the SQL list of the roles of an exit (a leg or an order
// that protects an entry's position: exchange.RoleTakeProfit, …), for
// "role IN " + exitRolesSQL.
const exitRolesSQL = `('` + exchange.RoleTakeProfit + `', '` + exchange.RoleStopLoss + `', '` + exchange.RoleTrailingStop + `', '` + exchange.RoleOCO + `')`
