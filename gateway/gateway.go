// Package gateway is hoox's exactly-once flow: claim a signal's trace ID,
// dispatch its order, record the outcome — in one Postgres transaction. The
// HTTP handler, the CLI and the benchmarks all call Service.Execute, so the
// flow lives in one place.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/jobs"
	"github.com/hoox/hoox/signal"
)

// JobInserter is the part of a River client the gateway uses.
type JobInserter interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
}

// Deps are the gateway's collaborators.
type Deps struct {
	// Pool holds claim transactions.
	Pool *pgxpool.Pool
	// MarkerPool commits attempt markers; it is separate from Pool so a
	// request holding a claim connection never waits on its own pool.
	MarkerPool *pgxpool.Pool
	Venues     *exchange.Registry
	Jobs       JobInserter
	Logger     *slog.Logger
	Metrics    *Metrics
	// AfterVenue, when set, runs between the venue's answer and the commit.
	// Fault tests use it to kill the process at the worst moment.
	AfterVenue func(traceID string)
}

// Service executes signals exactly once.
type Service struct {
	cfg  Config
	deps Deps
	// background tracks audit writes that finish after their answer.
	background sync.WaitGroup
}

// Close waits for audit writes still in flight; call it after the HTTP
// server has stopped and before the pools close.
func (s *Service) Close() { s.background.Wait() }

// New returns a Service.
func New(cfg Config, deps Deps) *Service {
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Metrics == nil {
		deps.Metrics = NewMetrics(nil)
	}
	return &Service{cfg: cfg.WithDefaults(), deps: deps}
}

// Input is one validated signal with its trace.
type Input struct {
	Signal   signal.Signal
	Trace    signal.Trace
	SourceIP netip.Addr
}

// Outcome is what a signal produced.
type Outcome struct {
	TraceID    string
	Status     string // dispatched, rejected, reconciling
	ReceivedAt time.Time
	Order      *db.OrderRow
}

// Original describes the first attempt of a trace, for repeats.
type Original struct {
	TraceID       string
	Status        string
	OrderID       *uuid.UUID
	ClientOrderID *string
	FirstSeen     time.Time
}

// Execute claims in.Trace and, when this is the first attempt, places the
// order and records it. Refusals are *Error values.
func (s *Service) Execute(ctx context.Context, in Input) (*Outcome, error) {
	out, err := s.execute(ctx, in)
	s.deps.Metrics.observeOutcome(out, err)
	return out, err
}

func (s *Service) execute(ctx context.Context, in Input) (*Outcome, error) {
	sig, tr := in.Signal, in.Trace
	venue, ok := s.deps.Venues.For(sig.Exchange, sig.Test)
	if !ok {
		return nil, invalid("exchange", fmt.Sprintf("%q is not a configured venue (configured: %v)", sig.Exchange, s.deps.Venues.Names()))
	}

	claimStart := time.Now()
	tx, res, err := db.Claim(ctx, s.deps.Pool, db.ClaimParams{
		TraceID: tr.ID, LockKey: tr.LockKey, Fingerprint: tr.Fingerprint, Mode: tr.Mode,
		KeySource: string(tr.Source), Exchange: sig.Exchange, Symbol: sig.Symbol, Action: sig.Action,
		Signal: sig.Canonical(), SourceIP: in.SourceIP, SignalTime: sig.Timestamp,
		TTL: s.cfg.TraceTTL, Window: s.cfg.DedupWindow, LockWait: s.cfg.LockWait,
	})
	s.deps.Metrics.ClaimSeconds.Observe(time.Since(claimStart).Seconds())
	switch {
	case errors.Is(err, db.ErrLockTimeout):
		return nil, s.inProgress(tr.ID)
	case err != nil:
		return nil, unavailable("the database is unavailable; nothing was placed", 5*time.Second, err)
	case res.KillSwitch:
		tx.Rollback(ctx)
		return nil, &Error{Code: CodeKillSwitch, Detail: "trading is halted by the kill switch; nothing was placed", RetryAfter: 60 * time.Second}
	case !res.Found:
		tx.Rollback(ctx)
		return nil, s.inProgress(tr.ID)
	case !res.Claimed:
		return nil, s.repeat(ctx, tx, in, res.Trace)
	}
	return s.dispatch(ctx, tx, in, venue, res)
}

func (s *Service) inProgress(traceID string) *Error {
	retry := max(s.cfg.LockWait, time.Second)
	return &Error{Code: CodeInProgress, RetryAfter: retry,
		Detail: fmt.Sprintf("trace %s: the first attempt is still running; retry to learn its outcome", traceID)}
}

// repeat answers a signal whose trace is already claimed.
func (s *Service) repeat(ctx context.Context, tx *db.ClaimTx, in Input, t db.ClaimedTrace) error {
	orig := &Original{TraceID: t.TraceID, Status: t.Status, OrderID: t.OrderID, ClientOrderID: t.ClientOrderID, FirstSeen: t.ReceivedAt}
	e := &Error{Code: CodeDuplicate, Original: orig,
		Detail: fmt.Sprintf("trace %s was already received at %s; its outcome was %s", t.TraceID, t.ReceivedAt.UTC().Format(time.RFC3339Nano), t.Status)}
	event := "duplicate"
	if t.Fingerprint != in.Trace.Fingerprint {
		event = "key_reused"
		e.Code = CodeKeyReused
		e.Detail = fmt.Sprintf("trace %s was already used for a different signal; send a new key", t.TraceID)
	}
	// The answer is known now; its audit row commits asynchronously (it is
	// written with synchronous_commit off anyway), so a repeat waits for one
	// round trip, not two. Close waits for these writes.
	ev := db.Event{TraceID: t.TraceID, Event: event, SourceIP: in.SourceIP,
		Detail: map[string]any{"fingerprint": in.Trace.Fingerprint}}
	s.background.Add(1)
	go func() {
		defer s.background.Done()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := tx.Duplicate(ctx, ev); err != nil {
			s.deps.Logger.WarnContext(ctx, "record repeat event", "trace_id", t.TraceID, "error", err)
		}
	}()
	return e
}

// dispatch places the claimed signal's order and records the outcome. It
// runs detached from the request's cancellation: once the venue may hold an
// order, the outcome must be recorded even if the sender hung up.
func (s *Service) dispatch(ctx context.Context, tx *db.ClaimTx, in Input, venue exchange.Venue, res db.ClaimResult) (*Outcome, error) {
	// Bounded all the same: a hung database must not hold the request
	// forever.
	ctx, cancelAll := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.VenueTimeout+30*time.Second)
	defer cancelAll()
	sig, tr := in.Signal, in.Trace
	order := exchange.Order{
		ClientOrderID: signal.ClientOrderID(tr.ID, res.PriorOrders),
		Symbol:        sig.Symbol, Action: sig.Action, Side: sig.Side, ReduceOnly: sig.ReduceOnly,
		OrderType: sig.OrderType, Quantity: sig.Quantity, Price: sig.Price, Leverage: sig.Leverage, Test: sig.Test,
	}
	err := db.MarkAttempt(ctx, s.deps.MarkerPool, db.Event{TraceID: tr.ID, Event: "dispatch_started", SourceIP: in.SourceIP,
		Detail: map[string]any{"client_order_id": order.ClientOrderID}})
	if err != nil {
		tx.Rollback(ctx)
		return nil, unavailable("the database is unavailable; nothing was placed", 5*time.Second, err)
	}

	dispatchStart := time.Now()
	vctx, cancel := context.WithTimeout(ctx, s.cfg.VenueTimeout)
	lookupFirst := res.PriorAttempts > res.PriorOrders
	report, adopted, err := exchange.PlaceOrAdopt(vctx, venue, order, lookupFirst)
	cancel()
	s.deps.Metrics.DispatchSeconds.Observe(time.Since(dispatchStart).Seconds())
	if s.deps.AfterVenue != nil {
		s.deps.AfterVenue(tr.ID)
	}

	out := &Outcome{TraceID: tr.ID, ReceivedAt: res.Trace.ReceivedAt}
	switch {
	case errors.Is(err, exchange.ErrUnreachable):
		// Nothing reached the venue: roll the claim back so the sender's
		// retry executes.
		tx.Rollback(ctx)
		return nil, unavailable(fmt.Sprintf("venue %s is unreachable; nothing was placed", sig.Exchange), 5*time.Second, err)
	case err != nil:
		return s.reconcile(ctx, tx, in, order, out, err)
	}

	row := db.NewOrderRow(tr.ID, sig.Exchange, tr.Mode, order, report)
	out.Order = row
	status, event := db.TraceDispatched, "dispatched"
	if report.Status == exchange.StatusRejected {
		status, event = db.TraceRejected, "rejected"
	}
	out.Status = status
	detail := map[string]any{"order_id": row.ID, "client_order_id": row.ClientOrderID, "order_status": row.Status}
	if adopted {
		detail["adopted"] = true
	}
	if report.Reason != "" {
		detail["reason"] = report.Reason
	}
	if err := tx.Record(ctx, tr.ID, status, row, db.Event{TraceID: tr.ID, Event: event, SourceIP: in.SourceIP, Detail: detail}); err != nil {
		// The venue holds the order but the commit failed: the claim rolled
		// back, and the attempt marker makes the next attempt adopt it.
		s.deps.Logger.ErrorContext(ctx, "record order after placing it", "trace_id", tr.ID,
			"client_order_id", row.ClientOrderID, "error", err)
		return nil, unavailable("the order was sent but could not be recorded; retry to adopt it", 5*time.Second, err)
	}
	if status == db.TraceRejected {
		return nil, &Error{Code: CodeOrderRejected, Outcome: out,
			Detail: fmt.Sprintf("venue %s refused the order: %s", sig.Exchange, report.Reason)}
	}
	return out, nil
}

// reconcile keeps a trace whose order may exist at the venue but whose answer
// was lost, and queues a River job in the same transaction to resolve it.
func (s *Service) reconcile(ctx context.Context, tx *db.ClaimTx, in Input, order exchange.Order, out *Outcome, cause error) (*Outcome, error) {
	tr := in.Trace
	s.deps.Logger.WarnContext(ctx, "venue answer lost; reconciling", "trace_id", tr.ID,
		"client_order_id", order.ClientOrderID, "error", cause)
	args := jobs.ReconcileArgs{TraceID: tr.ID, Exchange: in.Signal.Exchange, Mode: tr.Mode, Order: order, ReceivedAt: out.ReceivedAt}
	if s.deps.Jobs == nil {
		tx.Rollback(ctx)
		return nil, unavailable("the venue's answer was lost and no reconciler runs; retry", 5*time.Second, cause)
	}
	if _, err := s.deps.Jobs.InsertTx(ctx, tx.Tx(), args, nil); err != nil {
		tx.Rollback(ctx)
		return nil, unavailable("the venue's answer was lost and the reconcile job could not be queued; retry", 5*time.Second, err)
	}
	err := tx.Record(ctx, tr.ID, db.TraceReconciling, nil, db.Event{TraceID: tr.ID, Event: "reconciling", SourceIP: in.SourceIP,
		Detail: map[string]any{"client_order_id": order.ClientOrderID, "cause": cause.Error()}})
	if err != nil {
		return nil, unavailable("the database is unavailable; retry to adopt the order", 5*time.Second, err)
	}
	out.Status = db.TraceReconciling
	return out, nil
}
