package jobs

import (
	"time"

	"github.com/hoox/hoox/exchange"
)

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
