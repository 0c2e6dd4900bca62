package jobs

import (
	"time"

	"github.com/riverqueue/river"

	"github.com/hoox/hoox/exchange"
)

// ReconcileMaxAttempts bounds the retries of one reconcile: with River's
// default backoff (attempt⁴ seconds) ten attempts span about four hours of
// venue outage before the trace is marked failed for an operator to check.
const ReconcileMaxAttempts = 10

// ReconcileArgs asks the reconcile worker to resolve a trace whose order was
// sent but whose answer was lost. It is inserted with InsertTx in the same
// transaction that marks the trace reconciling, so the two commit together.
type ReconcileArgs struct {
	TraceID    string         `json:"trace_id"`
	Exchange   string         `json:"exchange"`
	Mode       string         `json:"mode"`
	Order      exchange.Order `json:"order"`
	ReceivedAt time.Time      `json:"received_at"`
}

// Kind names the job in River's tables.
func (ReconcileArgs) Kind() string { return "reconcile" }

// InsertOpts bound the retries: River retries with backoff while the venue
// cannot be reached, and the last attempt settles the trace as failed.
func (ReconcileArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: river.QueueDefault, MaxAttempts: ReconcileMaxAttempts}
}
