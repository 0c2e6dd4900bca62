// Package testfactory writes rows straight into hoox's tables for tests —
// traces, orders, intents, events — bypassing the claim, so a test can set
// up any history (an expired trace, a reconciling one, an intent a dead
// attempt left) in one call. Every option has a default; a test names only
// what it is about. Modelled on river's rivershared/testfactory.
package testfactory

import (
	"cmp"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
)

// TraceOpts describe a trace_ids row. ID is required.
type TraceOpts struct {
	ID string
	// Status defaults to dispatched.
	Status db.TraceStatus
	// Fingerprint defaults to "fp".
	Fingerprint string
	// Mode defaults to live, KeySource to client.
	Mode, KeySource string
	// Exchange defaults to paper, Symbol to BTCUSDT, Action to buy.
	Exchange, Symbol, Action string
	// Signal is the stored canonical signal; "{}" by default.
	Signal string
	// ClientOrderID is stored when set (a reconciling trace names its
	// order).
	ClientOrderID string
	// ReceivedAt defaults to now; UpdatedAt to ReceivedAt.
	ReceivedAt, UpdatedAt time.Time
	// ExpiresAt defaults to a day after ReceivedAt.
	ExpiresAt time.Time
}

const traceSQL = `
INSERT INTO trace_ids (trace_id, fingerprint, mode, key_source, status, exchange, symbol, action, signal,
                       client_order_id, received_at, updated_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULLIF($10, ''), $11, $12, $13)`

// tracesSQL is traceSQL for the traces $1 || g, g from $14 to $15, in
// one statement.
const tracesSQL = `
INSERT INTO trace_ids (trace_id, fingerprint, mode, key_source, status, exchange, symbol, action, signal,
                       client_order_id, received_at, updated_at, expires_at)
SELECT $1::text || g, $2, $3, $4, $5, $6, $7, $8, $9, NULLIF($10, ''), $11, $12, $13
FROM generate_series($14::int, $15::int) g`

// Trace inserts a trace and returns the options with their defaults filled.
func Trace(t testing.TB, q db.DBTX, o TraceOpts) TraceOpts {
	t.Helper()
	o = o.withDefaults()
	exec(t, q, traceSQL, append([]any{o.ID}, o.fields()...)...)
	return o
}

// Traces inserts the traces prefix+from … prefix+to, each as o describes
// (o.ID is not used), in one statement: a table of many traces.
func Traces(t testing.TB, q db.DBTX, prefix string, from, to int, o TraceOpts) {
	t.Helper()
	o = o.withDefaults()
	exec(t, q, tracesSQL, append(append([]any{prefix}, o.fields()...), from, to)...)
}

// withDefaults fills o's unset options.
func (o TraceOpts) withDefaults() TraceOpts {
	o.Status = cmp.Or(o.Status, db.TraceDispatched)
	o.Fingerprint = cmp.Or(o.Fingerprint, "fp")
	o.Mode, o.KeySource = cmp.Or(o.Mode, "live"), cmp.Or(o.KeySource, "client")
	o.Exchange, o.Symbol, o.Action = cmp.Or(o.Exchange, "paper"), cmp.Or(o.Symbol, "BTCUSDT"), cmp.Or(o.Action, "buy")
	o.Signal = cmp.Or(o.Signal, "{}")
	if o.ReceivedAt.IsZero() {
		o.ReceivedAt = time.Now()
	}
	if o.UpdatedAt.IsZero() {
		o.UpdatedAt = o.ReceivedAt
	}
	if o.ExpiresAt.IsZero() {
		o.ExpiresAt = o.ReceivedAt.Add(24 * time.Hour)
	}
	return o
}

// fields are traceSQL's parameters after the trace ID ($2 on).
func (o TraceOpts) fields() []any {
	return []any{o.Fingerprint, o.Mode, o.KeySource, o.Status, o.Exchange, o.Symbol, o.Action,
		o.Signal, o.ClientOrderID, o.ReceivedAt, o.UpdatedAt, o.ExpiresAt}
}

// OrderOpts describe an orders row. TraceID is required.
type OrderOpts struct {
	TraceID string
	// ID defaults to a new UUIDv7; ClientOrderID to "hx" and 30 of its
	// hex digits.
	ID            uuid.UUID
	ClientOrderID string
	// Exchange defaults to paper, Symbol to BTCUSDT, Mode to live.
	Exchange, Symbol, Mode string
	// OrderType defaults to market.
	OrderType string
	// Quantity defaults to "0.5"; Price is null when empty. Both are exact
	// decimal text.
	Quantity, Price string
	// Status defaults to filled.
	Status       exchange.Status
	RejectReason string
	// CreatedAt defaults to now.
	CreatedAt time.Time
	// Role defaults to primary (the signal's own order).
	Role string
}

const orderSQL = `
INSERT INTO orders (id, trace_id, client_order_id, exchange, symbol, action, side, order_type, quantity, price, mode,
                    status, reject_reason, created_at, role)
VALUES ($1, $2, $3, $4, $5, 'buy', 'buy', $6, $7::numeric, NULLIF($8, '')::numeric, $9, $10, NULLIF($11, ''), $12, $13)`

// Order inserts an order and returns the options with their defaults
// filled.
func Order(t testing.TB, q db.DBTX, o OrderOpts) OrderOpts {
	t.Helper()
	if o.ID == uuid.Nil {
		o.ID = uuid.Must(uuid.NewV7())
	}
	o.ClientOrderID = cmp.Or(o.ClientOrderID, "hx"+strings.ReplaceAll(o.ID.String(), "-", "")[:30])
	o.Exchange, o.Symbol, o.Mode = cmp.Or(o.Exchange, "paper"), cmp.Or(o.Symbol, "BTCUSDT"), cmp.Or(o.Mode, "live")
	o.OrderType, o.Quantity = cmp.Or(o.OrderType, "market"), cmp.Or(o.Quantity, "0.5")
	o.Status = cmp.Or(o.Status, exchange.StatusFilled)
	o.Role = cmp.Or(o.Role, exchange.RolePrimary)
	if o.CreatedAt.IsZero() {
		o.CreatedAt = time.Now()
	}
	exec(t, q, orderSQL, o.ID, o.TraceID, o.ClientOrderID, o.Exchange, o.Symbol, o.OrderType, o.Quantity, o.Price,
		o.Mode, o.Status, o.RejectReason, o.CreatedAt, o.Role)
	return o
}

// IntentOpts describe a dispatch_intents row. TraceID and Order (with its
// ClientOrderID) are required.
type IntentOpts struct {
	TraceID string
	Order   exchange.Order
	// LockKey defaults to TraceID; Fingerprint to "fp".
	LockKey, Fingerprint string
	// Exchange defaults to paper, Mode to live, KeySource to client.
	Exchange, Mode, KeySource string
	// SentAt defaults to now; it is also received_at.
	SentAt time.Time
	// Outcome is empty for an open intent: an attempt that died.
	Outcome db.IntentOutcome
	// Execution is the intent's execution number; nil takes one past the
	// lock key's highest.
	Execution *int
	// ArmID is the arming's ID (db.Intent.ArmID); zero leaves it NULL, as
	// for an intent armed before migration 00049.
	ArmID int64
}

const intentSQL = `
INSERT INTO dispatch_intents (client_order_id, lock_key, trace_id, fingerprint, mode, key_source, exchange, symbol,
                              action, order_spec, signal, received_at, sent_at, outcome, execution, settled_at, arm_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, '{"exchange":"paper"}', $11, $11, NULLIF($12, ''),
        coalesce($13::integer, (SELECT max(execution) + 1 FROM dispatch_intents WHERE lock_key = $2), 0),
        CASE WHEN $12 = '' THEN NULL ELSE $11::timestamptz END, NULLIF($14::bigint, 0))`

// Intent inserts an intent and returns the options with their defaults
// filled.
func Intent(t testing.TB, q db.DBTX, o IntentOpts) IntentOpts {
	t.Helper()
	o.LockKey, o.Fingerprint = cmp.Or(o.LockKey, o.TraceID), cmp.Or(o.Fingerprint, "fp")
	o.Exchange, o.Mode, o.KeySource = cmp.Or(o.Exchange, "paper"), cmp.Or(o.Mode, "live"), cmp.Or(o.KeySource, "client")
	if o.SentAt.IsZero() {
		o.SentAt = time.Now()
	}
	spec, err := json.Marshal(o.Order)
	if err != nil {
		t.Fatalf("testfactory: encode order: %v", err)
	}
	exec(t, q, intentSQL, o.Order.ClientOrderID, o.LockKey, o.TraceID, o.Fingerprint, o.Mode, o.KeySource, o.Exchange,
		o.Order.Symbol, o.Order.Action, spec, o.SentAt, o.Outcome, o.Execution, o.ArmID)
	return o
}

// Event inserts one audit event at at with detail (nil: empty).
func Event(t testing.TB, q db.DBTX, traceID, event string, at time.Time, detail map[string]any) {
	t.Helper()
	if detail == nil {
		detail = map[string]any{}
	}
	exec(t, q, `INSERT INTO trace_events (trace_id, event, at, detail) VALUES ($1, $2, $3, $4)`, traceID, event, at, detail)
}

func exec(t testing.TB, q db.DBTX, sql string, args ...any) {
	t.Helper()
	if _, err := q.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("testfactory: %v", err)
	}
}
