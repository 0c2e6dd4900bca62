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
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/jobs"
	"github.com/hoox/hoox/notify"
	"github.com/hoox/hoox/signal"
)

// JobInserter is the part of a River client the gateway uses: reconcile
// jobs and notifications are inserted in the claim's transaction.
type JobInserter interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	InsertManyTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
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
	// Notifier queues operators' notifications (rejected, reconciling,
	// venue credentials, …) with the events; nil queues none.
	Notifier *jobs.Notifier
	Logger   *slog.Logger
	Metrics  *Metrics
	// Deployment is this installation's namespace for client order IDs
	// (db.Deployment, created by a migration): staging and production on
	// one venue account never derive each other's IDs, so never adopt each
	// other's orders.
	Deployment string
	// Latency, when set, hears how long each Execute took, so background
	// work (the purge, through internal/pace) can yield to signals.
	Latency LatencyObserver
	// AfterVenue, when set, runs between the venue's answer and the commit.
	// Fault tests use it to kill the process at the worst moment.
	AfterVenue func(traceID string)
	// AfterLeg, when set, runs between a leg's venue answer and its
	// record (the crash drill for multi-order signals).
	AfterLeg func(clientOrderID string)
}

// LatencyObserver hears each signal's latency (see Deps.Latency).
type LatencyObserver interface {
	Observe(d time.Duration)
}

// Service executes signals exactly once.
type Service struct {
	cfg  Config
	deps Deps
	// inflight counts Execute calls; closing, set by Close under life,
	// refuses new ones, so no Add races Close's Wait.
	life     sync.Mutex
	closing  bool
	inflight sync.WaitGroup
	// background tracks work that finishes after its answer (audit
	// writes, a close's exitsAfterClose); it is started only by calls
	// counted in inflight.
	background sync.WaitGroup
	// flights are the signals in flight on this replica, by lock key.
	flights flights
	// repeatEvents are audit events of repeats answered from a flight,
	// waiting for one batched write.
	repeatEvents eventBatch
	// settled are trace IDs this replica saw settled: their repeats try
	// one read before a claim (settled.go).
	settled settledKeys
	// credAlerts is when each API key's refusal was last notified, by
	// key name (exchange.Registry.KeyName), so a broken key alerts once
	// an hour, not once a signal, and silences no other key.
	credMu     sync.Mutex
	credAlerts map[string]time.Time
	// sendGuard reads the kill switch right before an order request that
	// follows Place's own venue reads (exchange.WithSendGuard), built once.
	sendGuard func(context.Context) error
	// legs places a signal's follow-up orders after its primary is
	// recorded (the sweeper runs the same code for what a crash left).
	legs *jobs.LegRunner
}

// Close refuses new signals, waits for the ones in flight to be recorded
// (each is bounded by HOOX_VENUE_TIMEOUT + 30 s) and then for audit writes
// and closes' exits (exitsAfterClose, bounded by twice the venue timeout
// + 5 s) still running; call it after the HTTP server has stopped and before the
// pools close. Calling it again returns at once.
func (s *Service) Close() {
	s.life.Lock()
	s.closing = true
	s.life.Unlock()
	s.inflight.Wait()
	s.background.Wait()
}

// enter counts a signal in flight, unless Close has begun.
func (s *Service) enter() bool {
	s.life.Lock()
	defer s.life.Unlock()
	if s.closing {
		return false
	}
	s.inflight.Add(1)
	return true
}

// New returns a Service.
func New(cfg Config, deps Deps) *Service {
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Metrics == nil {
		deps.Metrics = NewMetrics(nil)
	}
	cfg = cfg.WithDefaults()
	s := &Service{cfg: cfg, deps: deps, credAlerts: map[string]time.Time{},
		flights: flights{m: map[string]*flight{}}, sendGuard: db.SendGuard(deps.MarkerPool),
		legs: jobs.NewLegRunner(deps.Pool, deps.MarkerPool, jobs.Config{Timing: cfg.Timing}, deps.Venues, deps.Logger, deps.AfterLeg).
			QueueFollowsWith(deps.Jobs)}
	if deps.Jobs != nil {
		// A leg refused in the request is notified as the primary's
		// refusal is, through the gateway's job inserter.
		s.legs.WithNotifier(deps.Notifier, deps.Jobs)
	}
	return s
}

// Input is one validated signal with its trace.
type Input struct {
	Signal   signal.Signal
	Trace    signal.Trace
	SourceIP netip.Addr
	// Arrived is when the signal reached hoox (zero: when Execute is
	// called). The dedup window is measured from it, however long the
	// signal then waited for a copy in flight, a connection or a lock.
	Arrived time.Time
	// canonical memoises Signal.Canonical() (canonicalSignal): the trace
	// and the intent store the same bytes.
	canonical []byte
	// land, set for the leader of a flight (coalesce), hands the copies
	// waiting for it the outcome as soon as the trace commits.
	land func(*Outcome)
}

// canonicalSignal is in.Signal.Canonical(), built on first use.
func (in *Input) canonicalSignal() []byte {
	if in.canonical == nil {
		in.canonical = in.Signal.Canonical()
	}
	return in.canonical
}

// Outcome is what a signal produced.
type Outcome struct {
	TraceID    string
	Status     db.TraceStatus // dispatched, rejected, reconciling
	ReceivedAt time.Time
	Order      *db.OrderRow
	// Legs are the orders of the signal's legs recorded so far (the other
	// parts of a split close), in plan order; empty for a one-order signal.
	Legs []db.OrderRow
	// Cancelled lists the orders a cancel signal cancelled (empty, not
	// nil, when it found none open); nil for every other signal.
	Cancelled []db.OrderRow
}

// Original describes the first attempt of a trace, for repeats.
type Original struct {
	TraceID       string
	Status        db.TraceStatus
	OrderID       *uuid.UUID
	ClientOrderID *string
	FirstSeen     time.Time
	// Cancelled lists what the first attempt of a cancel signal
	// cancelled; nil for every other signal.
	Cancelled []db.OrderRow
}

// Execute claims in.Trace and, when this is the first attempt, places the
// order and records it. Refusals are *Error values.
func (s *Service) Execute(ctx context.Context, in Input) (*Outcome, error) {
	if !s.enter() {
		return nil, unavailable("hoox is shutting down; nothing was placed", 5*time.Second, nil)
	}
	defer s.inflight.Done()
	if in.Arrived.IsZero() {
		in.Arrived = s.cfg.Timing.Clock()
	}
	start := time.Now()
	out, err := s.execute(ctx, in)
	if s.deps.Latency != nil {
		s.deps.Latency.Observe(time.Since(start))
	}
	s.deps.Metrics.observeOutcome(out, err)
	return out, err
}

func (s *Service) execute(ctx context.Context, in Input) (*Outcome, error) {
	sig := in.Signal
	venue, ok := s.deps.Venues.For(sig.Exchange, sig.Test)
	if !ok {
		return nil, invalid("exchange", fmt.Sprintf("%q is not a configured venue (configured: %v)", sig.Exchange, s.deps.Venues.Names()))
	}
	if err := canAttach(sig, venue); err != nil {
		return nil, err
	}
	if err := canSize(sig, venue); err != nil {
		return nil, err
	}
	if err := canCancel(sig, venue); err != nil {
		return nil, err
	}
	return s.coalesce(ctx, in, venue)
}

// claim runs one attempt against the database: claim the trace (waiting at
// most lockWait for its lock), then answer a repeat or dispatch.
func (s *Service) claim(ctx context.Context, in Input, venue exchange.Venue, lockWait time.Duration) (*Outcome, error) {
	sig, tr := in.Signal, in.Trace
	if answered, err := s.settledRepeat(ctx, in, lockWait); answered {
		return nil, err
	}
	claimStart := time.Now()
	tx, res, err := db.Claim(ctx, s.deps.Pool, db.ClaimParams{
		TraceID: tr.ID, LockKey: tr.LockKey, Fingerprint: tr.Fingerprint, Mode: tr.Mode,
		KeySource: string(tr.Source), Exchange: sig.Exchange, Symbol: sig.Symbol, Action: sig.Action,
		Signal: in.canonicalSignal(), SourceIP: in.SourceIP, SignalTime: sig.Timestamp,
		TTL: s.cfg.Timing.TraceTTL, Window: s.cfg.DedupWindow + s.cfg.Timing.Clock().Sub(in.Arrived), LockWait: lockWait,
		// Longer than any dispatch (bounded by VenueTimeout + 30 s below).
		IdleTimeout: s.cfg.Timing.VenueTimeout + 45*time.Second,
	})
	s.deps.Metrics.ObserveStage(StageClaim, time.Since(claimStart))
	switch {
	case errors.Is(err, db.ErrLockTimeout) && tr.Source == signal.KeyWindow:
		// A window key's lock is every execution's of the signal: what
		// holds it may be an earlier execution's reconcile or exit legs,
		// while this execution — a new order — has no attempt running.
		// 503, so that a sender that resends only after a 5xx
		// (TradingView) sends it again; a resend of an execution in
		// flight then finds it settled (409).
		return nil, unavailable(fmt.Sprintf("trace %s: an execution of this signal is being settled; nothing was placed by this request: retry", tr.ID),
			max(s.cfg.Timing.LockWait, time.Second), err)
	case errors.Is(err, db.ErrLockTimeout):
		return nil, s.inProgress(tr.ID)
	case errors.Is(err, db.ErrBusy):
		return nil, unavailable("hoox is at capacity: every database connection stayed busy; nothing was placed, retry", 5*time.Second, err)
	case err != nil:
		return nil, unavailable("the database is unavailable; nothing was placed", 5*time.Second, err)
	case res.Found && !res.Claimed:
		// A repeat is answered before the kill switch: its order (or its
		// refusal) exists, and "nothing was placed" would be a lie that
		// invites a manual second order. ClaimSQL returns the existing
		// trace whether or not trading is halted.
		// The repeat takes the claim's transaction over and ends it off
		// the answer's path.
		s.rememberSettled(res.Trace)
		return nil, s.repeat(ctx, tx, in, res.Trace)
	}
	// From here this attempt owns the claim's transaction until it ends: by
	// a commit (Record), or by this rollback on every other way out — a
	// refusal, an error, a panic (a connection left idle in its transaction
	// would hold the trace's lock until a restart). Rollback is a no-op
	// after the commit. It is called early only where the order is part of
	// the protocol: an intent settled while the claim still holds the
	// trace's lock (settleIntent), then the rollback that releases it.
	defer tx.Rollback(ctx)
	switch {
	case res.KillSwitch:
		// An earlier attempt of this signal may have placed its order and
		// died before recording it: "nothing was placed" could be a lie
		// that invites a manual second order. Nothing is looked up or
		// placed under the switch; the sweeper records that order.
		return nil, killSwitched(res.Pending != nil || len(res.Unknown) > 0)
	case !res.Found:
		return nil, s.inProgress(tr.ID)
	case sig.Action == signal.ActionCancel:
		return s.cancelOrders(ctx, tx, in, venue, res)
	}
	return s.dispatch(ctx, tx, in, venue, res)
}

// killSwitched is the 503 for a signal the kill switch halted before it
// sent anything; earlier says an earlier attempt of the signal may have
// placed its order all the same.
func killSwitched(earlier bool) *Error {
	if earlier {
		return &Error{Code: codes.KillSwitch, RetryAfter: 60 * time.Second,
			Detail: "trading is halted by the kill switch: this request sent no order, but an earlier attempt of this signal may have placed one (it is recorded once the venue is asked): do not place it by hand; resend after the release"}
	}
	return &Error{Code: codes.KillSwitch, Detail: "trading is halted by the kill switch; nothing was placed", RetryAfter: 60 * time.Second}
}

func (s *Service) inProgress(traceID string) *Error {
	retry := max(s.cfg.Timing.LockWait, time.Second)
	return &Error{Code: codes.InProgress, RetryAfter: retry,
		Detail: fmt.Sprintf("trace %s: the first attempt is still running; retry to learn its outcome", traceID)}
}

// repeat answers a signal whose trace is already claimed. tx is the
// claim's transaction, nil when the answer came from a plain read
// (settledRepeat).
func (s *Service) repeat(ctx context.Context, tx *db.ClaimTx, in Input, t db.ClaimedTrace) error {
	e, ev := repeatAnswer(in, t)
	if in.Signal.Action == signal.ActionCancel && e.Code == codes.Duplicate && t.Status == db.TraceDispatched {
		// A cancel's outcome is the orders it cancelled: one more read,
		// for cancels only.
		cancelled, err := db.OrdersCancelledBy(ctx, s.deps.MarkerPool, t.TraceID)
		if err != nil {
			s.deps.Logger.WarnContext(ctx, "read a repeated cancel's orders", "trace_id", t.TraceID, "error", err)
		} else {
			e.Original.Cancelled = cancelled
		}
	}
	// The answer is known from the claim's one round trip, which wrote
	// nothing (the trace's insert found its conflict). Off the answer's
	// path, the claim's transaction ends with a rollback (no WAL, the
	// connection back at once) and the audit row joins the repeats' batch,
	// committed with those of other repeats (asynchronously when all are
	// `duplicate`, as before). Close waits for both.
	if tx != nil {
		s.background.Add(1)
		go func() {
			defer s.background.Done()
			tx.Rollback(ctx)
		}()
	}
	s.repeatEvents.add(s, ev)
	return e
}

// repeatAnswer is the 409 (or the 422 when the key came with a different
// signal) for a repeat of trace t, and the audit event that records it.
func repeatAnswer(in Input, t db.ClaimedTrace) (*Error, db.Event) {
	orig := &Original{TraceID: t.TraceID, Status: t.Status, OrderID: t.OrderID, ClientOrderID: t.ClientOrderID, FirstSeen: t.ReceivedAt}
	e := &Error{Code: codes.Duplicate, Original: orig,
		Detail: fmt.Sprintf("trace %s was already received at %s; its outcome was %s", t.TraceID, t.ReceivedAt.UTC().Format(time.RFC3339Nano), t.Status)}
	event := db.EventDuplicate
	if t.Fingerprint != in.Trace.Fingerprint {
		event = db.EventKeyReused
		e.Code = codes.KeyReused
		e.Detail = fmt.Sprintf("trace %s was already used for a different signal; send a new key", t.TraceID)
	}
	return e, db.Event{TraceID: t.TraceID, Event: event, SourceIP: in.SourceIP,
		DetailJSON: db.FingerprintDetail(in.Trace.Fingerprint)}
}

// dispatch places the claimed signal's order and records the outcome. It
// runs detached from the request's cancellation: once the venue may hold an
// order, the outcome must be recorded even if the sender hung up. It
// commits the claim or leaves it to its owner (claim) to roll back.
//
// The recovery protocol: the attempt's intent commits before the venue
// sees a byte; an intent left open by a dead attempt (res.Pending) makes
// this attempt reuse its client order ID and ask the venue first, adopting
// only an order that matches; and "not found" counts only once the venue's
// accept window for the last send has closed.
func (s *Service) dispatch(ctx context.Context, tx *db.ClaimTx, in Input, venue exchange.Venue, res db.ClaimResult) (_ *Outcome, err error) {
	// Bounded all the same: a hung database must not hold the request
	// forever.
	ctx, cancelAll := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.Timing.VenueTimeout+30*time.Second)
	defer cancelAll()
	sig, tr := in.Signal, in.Trace
	// armed is how many times the claim saw the intent of the ID this
	// attempt sends under armed (0: a new ID); the intent is armed again
	// only if it still holds that (db.Intent.Armed).
	clientOrderID, armed := res.ReuseID, res.ReuseAttempts
	// earlierUnproven is true when the intent this attempt arms is a dead
	// attempt's whose send nothing has proven absent (a venue that may
	// book it late, but takes an ID only once: Bybit). That row stands
	// for the earlier send too: it is never settled unsent for this
	// attempt's sake, or nobody would look for that order again.
	earlierUnproven := false
	if clientOrderID == "" {
		clientOrderID = signal.ClientOrderID(s.deps.Deployment, tr.LockKey, res.Executions)
	}
	order := exchange.Order{
		ClientOrderID: clientOrderID,
		Symbol:        sig.Symbol, Action: sig.Action, Side: sig.Side, ReduceOnly: sig.ReduceOnly,
		OrderType: sig.OrderType, Quantity: sig.Quantity, Price: sig.Price, Leverage: sig.Leverage, Test: sig.Test,
		// Recorded on the order and its exits: a cancel naming a
		// strategy takes only that strategy's (cancelTakes).
		Strategy: &sig.Strategy,
	}
	order = withAttachments(order, sig)
	out := &Outcome{TraceID: tr.ID, ReceivedAt: res.Trace.ReceivedAt}
	if err := s.tagLedger(ctx, venue, in, &order); err != nil {
		return nil, err
	}
	// sized is true once order carries its resolved size: a sized signal's
	// order (a sized signal's, a spot close's or a split close's) comes
	// from an earlier attempt's intent when there is one, never from a
	// second sizing.
	sized := !s.plans(sig, venue, order)
	// venueCalled is true once this attempt may have called the venue
	// since its claim read the kill switch (tagLedger's symbol rules, read
	// from the venue on a cache miss; a lookup of an earlier attempt's order, a sizing or
	// position read): its intent's write reads the switch again
	// (db.Intent.AfterVenueCall). The plain path calls nothing, and its
	// intent's statement stays the one without that read.
	_, spotTrader := venue.(exchange.SpotTrader)
	venueCalled := spotTrader || len(res.Unknown) > 0 || res.Pending != nil || !sized

	for _, u := range res.Unknown {
		earlier := order
		if !sized {
			// That execution sized its own order: ask about what it sent.
			earlier = u.Order
		}
		held, err := s.askUnknown(ctx, tx, in, venue, earlier, u)
		if err != nil {
			return nil, err
		}
		if held != nil {
			earlier.ClientOrderID = u.ClientOrderID
			return s.settle(ctx, tx, in, earlier, out, *held, true)
		}
	}

	if p := res.Pending; p != nil && tr.Source == signal.KeyWindow && !p.SameWindow {
		// A dead attempt of an earlier window execution: a different order,
		// recovered here under the lock as the sweeper would, so this
		// execution gets its answer now rather than after a sweep.
		if err := s.recoverEarlier(ctx, tx, in, venue, order, p); err != nil {
			return nil, err
		}
	} else if p != nil {
		order.ClientOrderID, armed = p.ClientOrderID, p.Attempts
		if !sized {
			// The dead attempt sized its order and stored it in its
			// intent: look up, and if need be re-send, exactly that.
			stored, err := db.GetIntent(ctx, s.deps.MarkerPool, p.ClientOrderID)
			if err != nil {
				return nil, unavailable("the database is unavailable: this request sent no order, but an earlier attempt's order may exist: retry", 5*time.Second, err)
			}
			order, sized = stored.Order, true
		}
		held, err := s.askFirst(ctx, tx, in, venue, order, p)
		switch {
		case err != nil:
			return nil, err
		case held != nil:
			return s.settle(ctx, tx, in, order, out, *held, true)
		case p.SentAgo < venue.AcceptWindow():
			// Not found, but the dead attempt's request may still be
			// accepted: whether the order exists is unknown until the
			// window closes, so the reconcile waits for it.
			return s.reconcile(ctx, tx, in, order, out, errors.New("an earlier attempt's order is not visible yet and its accept window is still open"))
		case !exchange.ResendsSameID(venue, order):
			// Not found past the window, but this venue may still fill the
			// dead attempt's request late, and would take its ID again:
			// sending again could double it.
			// The reconcile (one place for the decision) ends the trace
			// failed as a missed trade.
			return s.reconcile(ctx, tx, in, order, out, fmt.Errorf("an earlier attempt's order is not at the venue and %s may still fill a late request", in.Signal.Exchange))
		}
		// Not found and the window has closed: nothing can appear, or
		// the venue refuses the ID should the original appear late; send
		// again under the same ID.
		earlierUnproven = !exchange.RefusesLateOrder(venue, order)
	}

	// ledger is the spot ledger's version a spot close was sized under:
	// its intent is written only if no other close of the holding wrote
	// one since (db.Intent.Ledger).
	var ledger *db.LedgerVersion
	if !sized {
		var done bool
		var resolved exchange.Order
		resolved, ledger, done, err = s.plan(ctx, tx, in, venue, order, out)
		if done {
			return nil, err
		}
		order = resolved
	}

	intent := &db.Intent{ClientOrderID: order.ClientOrderID, Execution: res.Executions, LockKey: tr.LockKey, TraceID: tr.ID,
		Fingerprint: tr.Fingerprint, Mode: tr.Mode, KeySource: string(tr.Source), Exchange: sig.Exchange, Order: order,
		Signal: in.canonicalSignal(), SourceIP: in.SourceIP, SignalTime: sig.Timestamp, ReceivedAt: res.Trace.ReceivedAt,
		Armed: armed, Ledger: ledger, AfterVenueCall: venueCalled}
	shared, _ := venue.(exchange.SharedDatabase)
	durable := shared == nil || !shared.SharesHooxDatabase()
	intentStart := time.Now()
	if err := db.WriteIntent(ctx, s.deps.MarkerPool, intent, durable); err != nil {
		switch {
		case errors.Is(err, db.ErrIntentConsumed) && ledger != nil:
			// Another attempt armed this ID, or another close of the
			// holding wrote its intent, after our claim read them: our
			// claim's connection, and its locks with it, was lost.
			return nil, unavailable(fmt.Sprintf("another close of strategy %q's %s, or another attempt of this signal, went first; nothing was placed by this one, retry",
				ledger.Strategy, ledger.Symbol), 5*time.Second, err)
		case errors.Is(err, db.ErrIntentConsumed):
			// Another attempt armed this ID after our claim read it: our
			// claim's connection, and the trace's lock with it, was lost.
			return nil, unavailable("another attempt of this signal is sending its order; nothing was placed by this one", 5*time.Second, err)
		case errors.Is(err, db.ErrKillSwitch):
			// Engaged during this attempt's venue calls, after its claim
			// read the switch: nothing was armed, and the claim rolls
			// back. An earlier attempt's intent this one would have
			// re-armed stays as it was, for the sweeper.
			ks := killSwitched(earlierUnproven)
			ks.Err = err
			return nil, ks
		}
		if earlierUnproven {
			// Armed or not, the intent stays open: the dead attempt's
			// order may still be booked, and only an open (or failed)
			// intent is looked for again — by the resend, or the sweeper.
			s.deps.Logger.WarnContext(ctx, "intent write failed; left open, an earlier attempt's order may exist",
				"trace_id", tr.ID, "client_order_id", order.ClientOrderID, "error", err)
			return nil, unavailable("the database is unavailable: this request sent no order, but an earlier attempt's order may exist: retry", 5*time.Second, err)
		}
		// The write may have committed with its answer lost (a connection
		// reset, a pooler restart, a failover at the commit): then the
		// intent is armed Armed+1 times though nothing went to the venue,
		// and the sender's resend would find an open intent, ask the venue,
		// and — at a venue that may fill a late request — end as a missed
		// trade. Settle exactly that arming unsent while the claim still
		// holds the trace's lock; it writes nothing if the write never
		// committed (or another attempt armed the ID since). Only for an
		// arming that stands for no earlier send (a new ID, a provably
		// unsent one, or one the venue proved absent).
		intent.Attempts = armed + 1
		s.settleIntent(ctx, intent, db.IntentUnsent, in, err)
		return nil, unavailable("the database is unavailable; nothing was placed", 5*time.Second, err)
	}
	s.deps.Metrics.ObserveStage(StageIntent, time.Since(intentStart))

	dispatchStart := time.Now()
	vctx, cancel := context.WithTimeout(ctx, s.cfg.Timing.VenueTimeout)
	// The intent's write read the kill switch (when it followed venue
	// calls), but Place may read the venue again before it sends: the
	// adapter reads the switch once more right before the order's
	// request when it made one first, and sends nothing while it is
	// engaged (db.ErrKillSwitch with exchange.ErrUnreachable). A venue
	// that writes in hoox's own database (paper) sends at once and never
	// runs the guard: its hot path carries none.
	if durable {
		vctx = exchange.WithSendGuard(vctx, s.sendGuard)
	}
	report, adopted, err := exchange.PlaceOrAdopt(vctx, venue, order, false)
	cancel()
	s.deps.Metrics.ObserveStage(StageVenue, time.Since(dispatchStart))
	if s.deps.AfterVenue != nil {
		s.deps.AfterVenue(tr.ID)
	}
	switch {
	case errors.Is(err, exchange.ErrMismatch):
		// Settled while the claim still holds the trace's lock, then rolled
		// back, in this order: after the rollback another attempt may
		// re-arm the intent, and this must not overwrite it.
		s.settleIntent(ctx, intent, db.IntentKeyReused, in, err)
		tx.Rollback(ctx)
		return nil, keyReusedAtVenue(tr.ID, err)
	case errors.Is(err, exchange.ErrUnreachable) && earlierUnproven:
		// This send never left, but the intent also stands for the dead
		// attempt's send, which the venue may still book: it stays open
		// (re-armed, so its accept window starts again) for the resend or
		// the sweeper to ask about, never unsent.
		s.leaveIntentOpen(ctx, intent, in, err)
		tx.Rollback(ctx)
		return nil, s.notSent(ctx, sig, err, true)
	case errors.Is(err, exchange.ErrUnreachable):
		// Nothing reached the venue: free the client order ID under the
		// lock, then roll the claim back at once, so the sender's retry
		// executes.
		s.settleIntent(ctx, intent, db.IntentUnsent, in, err)
		tx.Rollback(ctx)
		return nil, s.notSent(ctx, sig, err, false)
	case err != nil:
		s.venueError(ctx, sig.Exchange, sig.Test, err)
		return s.reconcile(ctx, tx, in, order, out, err)
	}
	return s.settle(ctx, tx, in, order, out, report, adopted)
}

// notSent answers a send that never left (err wraps
// exchange.ErrUnreachable); earlier says an earlier attempt's order may
// exist. The send guard stops an order under a kill switch engaged during
// Place's own venue reads (db.ErrKillSwitch), or when it cannot read the
// switch (db.ErrUnavailable): neither is the venue's failure.
func (s *Service) notSent(ctx context.Context, sig signal.Signal, err error, earlier bool) *Error {
	switch {
	case errors.Is(err, db.ErrKillSwitch):
		ks := killSwitched(earlier)
		ks.Err = err
		return ks
	case errors.Is(err, db.ErrUnavailable) && earlier:
		return unavailable("the database is unavailable: this request sent no order, but an earlier attempt's order may exist: retry", 5*time.Second, err)
	case errors.Is(err, db.ErrUnavailable):
		return unavailable("the database is unavailable; nothing was placed", 5*time.Second, err)
	}
	s.venueError(ctx, sig.Exchange, sig.Test, err)
	if earlier {
		return unavailable(fmt.Sprintf("venue %s is unreachable: this request sent no order, but an earlier attempt's order may exist: retry", sig.Exchange), 5*time.Second, err)
	}
	return unavailable(fmt.Sprintf("venue %s is unreachable; nothing was placed", sig.Exchange), 5*time.Second, err)
}

// askFirst looks up the order an earlier, dead attempt may have left at the
// venue. It returns the held order, or nil when the venue holds none; an
// error when the attempt must stop here (the claim then rolls back).
func (s *Service) askFirst(ctx context.Context, tx *db.ClaimTx, in Input, venue exchange.Venue, order exchange.Order, p *db.PendingIntent) (*exchange.Report, error) {
	tr := in.Trace
	if p.Fingerprint != tr.Fingerprint {
		// The key's earlier attempt was another signal; the sweeper records
		// that one's order, and this one must not adopt it.
		return nil, &Error{Code: codes.KeyReused,
			Detail: fmt.Sprintf("trace %s: an earlier attempt under this key was a different signal; send a new key", tr.ID)}
	}
	vctx, cancel := context.WithTimeout(ctx, s.cfg.Timing.VenueTimeout)
	defer cancel()
	held, err := venue.Lookup(vctx, order)
	switch {
	case err == nil:
		return &held, nil
	case errors.Is(err, exchange.ErrNotFound):
		return nil, nil
	case errors.Is(err, exchange.ErrMismatch):
		return nil, keyReusedAtVenue(tr.ID, err)
	}
	// Without an answer, placing could double the order.
	s.venueError(ctx, in.Signal.Exchange, in.Signal.Test, err)
	return nil, unavailable(fmt.Sprintf("venue %s could not be asked about an earlier attempt's order: this request sent no order, but that order may exist: retry", in.Signal.Exchange), 5*time.Second, err)
}

// recoverEarlier settles, in this claim, the open intent p that a dead
// attempt of an earlier window execution of the signal left: it asks the
// venue and records what the sweeper would (the order found under its own
// trace; absent and not placed; a missed trade at a venue that may fill
// late). While that order may still be accepted it answers in_progress
// with a Retry-After for the rest of the venue's window; after an error
// the claim rolls back.
func (s *Service) recoverEarlier(ctx context.Context, tx *db.ClaimTx, in Input, venue exchange.Venue, order exchange.Order, p *db.PendingIntent) error {
	sig, tr := in.Signal, in.Trace
	earlier := order
	earlier.ClientOrderID = p.ClientOrderID
	if s.plans(sig, venue, order) {
		// That execution sized (or split) its own order; adopt only what
		// it sent.
		stored, err := db.GetIntent(ctx, s.deps.MarkerPool, p.ClientOrderID)
		if err != nil {
			return unavailable("the database is unavailable; nothing was placed", 5*time.Second, err)
		}
		earlier = stored.Order
	}
	vctx, cancel := context.WithTimeout(ctx, s.cfg.Timing.VenueTimeout)
	held, err := venue.Lookup(vctx, earlier)
	cancel()
	// The sweeper's own decision, so the two never drift apart.
	it := db.Intent{ClientOrderID: p.ClientOrderID, TraceID: p.TraceID, Exchange: sig.Exchange, Mode: tr.Mode,
		Order: earlier, SentAgo: p.SentAgo}
	r, _, err := jobs.DecideLookup(it, p.TraceID, true, venue, held, err)
	switch {
	case errors.Is(err, jobs.ErrNotYet):
		// 503, not 409: this execution is a new order, and a sender such as
		// TradingView resends only after a 5xx.
		return unavailable(fmt.Sprintf("trace %s: the previous execution's order %s may still be accepted or still be executing at the venue; nothing was placed for this one yet: retry shortly", tr.ID, p.ClientOrderID),
			max(venue.AcceptWindow()-p.SentAgo, 2*time.Second), err)
	case err != nil:
		s.venueError(ctx, sig.Exchange, sig.Test, err)
		return unavailable(fmt.Sprintf("venue %s could not be asked about the previous execution's order; nothing was placed", sig.Exchange), 5*time.Second, err)
	}
	for _, ev := range r.Events {
		ev.Detail["recovered_by"] = tr.ID
	}
	if err := jobs.InsertFollowTx(ctx, s.deps.Jobs, tx.Tx(), r.Order, tr.Mode, earlier); err != nil {
		return unavailable("the database is unavailable; nothing was placed", 5*time.Second, err)
	}
	if err := tx.RecoverEarlier(ctx, p.ClientOrderID, r, s.cfg.Timing.TraceTTL); err != nil {
		return unavailable("the database is unavailable; nothing was placed", 5*time.Second, err)
	}
	if r.TraceStatus == db.TraceFailed {
		s.deps.Logger.ErrorContext(ctx, "previous execution's order not recorded; not re-sent",
			"trace_id", p.TraceID, "client_order_id", p.ClientOrderID, "exchange", sig.Exchange, "reason", r.Events[0].Detail["reason"])
		if err := s.notify(ctx, tx, in, earlier, r.Events[0]); err != nil {
			return unavailable("the database is unavailable; nothing was placed", 5*time.Second, err)
		}
	}
	return nil
}

// askUnknown looks up an earlier order of the key whose existence was
// unknown when an operator released its trace by force. It returns the
// held order (to adopt), or nil when the venue proves it absent (a venue
// that refuses late requests, past the accept window: the intent is
// settled not placed); an error when it may still exist or cannot be
// asked — nothing may be placed then, and the claim rolls back.
func (s *Service) askUnknown(ctx context.Context, tx *db.ClaimTx, in Input, venue exchange.Venue, order exchange.Order, u db.UnknownIntent) (*exchange.Report, error) {
	tr := in.Trace
	if u.Fingerprint != tr.Fingerprint {
		return nil, &Error{Code: codes.KeyReused,
			Detail: fmt.Sprintf("trace %s: an earlier attempt under this key was a different signal and its order %s is unknown; send a new key", tr.ID, u.ClientOrderID)}
	}
	order.ClientOrderID = u.ClientOrderID
	vctx, cancel := context.WithTimeout(ctx, s.cfg.Timing.VenueTimeout)
	held, err := venue.Lookup(vctx, order)
	cancel()
	switch {
	case err == nil:
		return &held, nil
	case errors.Is(err, exchange.ErrMismatch):
		return nil, keyReusedAtVenue(tr.ID, err)
	case errors.Is(err, exchange.ErrNotFound) && exchange.RefusesLate(venue) && u.SentAgo >= venue.AcceptWindow():
		ev := db.Event{TraceID: u.TraceID, Event: db.EventSwept, SourceIP: in.SourceIP, Detail: map[string]any{
			"found": false, "client_order_id": u.ClientOrderID, "resolved_by": tr.ID}}
		if err := db.SettleIntent(ctx, s.deps.MarkerPool, u.ClientOrderID, db.IntentNotPlaced, ev); err != nil {
			return nil, unavailable("the database is unavailable; nothing was placed", 5*time.Second, err)
		}
		return nil, nil
	case errors.Is(err, exchange.ErrNotFound):
		s.deps.Logger.ErrorContext(ctx, "an earlier order of this key may still exist at the venue; not placed",
			"trace_id", tr.ID, "client_order_id", u.ClientOrderID, "exchange", in.Signal.Exchange)
		return nil, unavailable(fmt.Sprintf("an earlier order of this key (%s, released while its outcome was unknown) is not visible at %s, "+
			"which may still fill a late request; nothing was placed: check the venue", u.ClientOrderID, in.Signal.Exchange), 60*time.Second, nil)
	}
	s.venueError(ctx, in.Signal.Exchange, in.Signal.Test, err)
	return nil, unavailable(fmt.Sprintf("venue %s could not be asked about an earlier order of this key; nothing was placed", in.Signal.Exchange), 5*time.Second, err)
}

func keyReusedAtVenue(traceID string, err error) *Error {
	return &Error{Code: codes.KeyReused, Err: err,
		Detail: fmt.Sprintf("trace %s: the venue holds a different order under this key's client order id; send a new key", traceID)}
}

// settleIntent closes the intent this attempt armed, whose claim is about
// to roll back; call it before the rollback. The claim normally still
// holds the trace's lock, but its connection (and the lock) may have been
// lost while the venue call ran: the intent is closed only if no other
// attempt has armed it since (db.SettleAttempt). A failure is only
// logged: the sweeper settles the intent later.
func (s *Service) settleIntent(ctx context.Context, intent *db.Intent, outcome db.IntentOutcome, in Input, cause error) {
	ev := db.Event{TraceID: in.Trace.ID, Event: db.EventDispatchAborted, SourceIP: in.SourceIP,
		Detail: map[string]any{"client_order_id": intent.ClientOrderID, "outcome": outcome, "cause": cause.Error()}}
	// Detached from the dispatch's deadline, which the steps before may
	// have spent: an intent left armed after a send that never left is a
	// missed trade at a venue that may fill late.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	settled, err := db.SettleAttempt(sctx, s.deps.MarkerPool, intent.ClientOrderID, intent.Attempts, intent.ArmID, outcome, ev)
	switch {
	case err != nil:
		s.deps.Logger.ErrorContext(ctx, "settle intent: could not record that nothing was sent; a resend will ask the venue first",
			"client_order_id", intent.ClientOrderID, "outcome", outcome, "error", err)
	case !settled:
		s.deps.Logger.WarnContext(ctx, "intent armed again by another attempt; its outcome is that attempt's",
			"client_order_id", intent.ClientOrderID, "outcome_not_written", outcome)
	}
}

// leaveIntentOpen records that this attempt's send never left while its
// intent stays open for an earlier attempt's send, which the venue may
// still book (dispatch's earlierUnproven): the audit trail's
// dispatch_aborted, with no outcome written. A failure is only logged.
func (s *Service) leaveIntentOpen(ctx context.Context, intent *db.Intent, in Input, cause error) {
	ev := db.Event{TraceID: in.Trace.ID, Event: db.EventDispatchAborted, SourceIP: in.SourceIP,
		Detail: map[string]any{"client_order_id": intent.ClientOrderID, "cause": cause.Error(),
			"intent": "left open: an earlier attempt's order may exist"}}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	if err := db.AppendEvent(sctx, s.deps.MarkerPool, ev, nil); err != nil {
		s.deps.Logger.WarnContext(ctx, "record an aborted send", "client_order_id", intent.ClientOrderID, "error", err)
	}
	s.deps.Logger.WarnContext(ctx, "send never left; intent left open, an earlier attempt's order may exist",
		"trace_id", in.Trace.ID, "client_order_id", intent.ClientOrderID, "error", cause)
}

// settleTimeout bounds a settlement that runs after its caller's own
// deadline may have passed (settleIntent, a leg's unsent mark).
const settleTimeout = 10 * time.Second

// notify queues ev's notification in the claim's transaction, so it commits
// with the event or not at all. Nothing is queued (and no round trip made)
// for an event operators did not ask for.
func (s *Service) notify(ctx context.Context, tx *db.ClaimTx, in Input, order exchange.Order, ev db.Event) error {
	if !s.deps.Notifier.Enabled(ev.Event) || s.deps.Jobs == nil {
		return nil
	}
	return s.deps.Notifier.InsertTx(ctx, s.deps.Jobs, tx.Tx(), jobs.TraceMessage(ev, in.Signal.Exchange, in.Trace.Mode, order))
}

// credentialAlertEvery is how often one API key's refusal is notified
// while it stays refused.
const credentialAlertEvery = time.Hour

// venueError notes a venue's failure for operators, and says loudly what to
// fix when the venue refused hoox's credentials: an error log every time,
// and a notification (with its audit event) once an hour. Both are by the
// key a signal for account in test mode or not reached the venue with
// (exchange.Registry.KeyName): an account with a testnet pair holds two
// keys, and a refused testnet key must neither take the live key's hourly
// alert nor be reported as the live key.
func (s *Service) venueError(ctx context.Context, account string, test bool, err error) {
	now := s.cfg.Timing.Clock()
	key := s.deps.Venues.KeyName(account, test)
	s.deps.Venues.NoteError(key, err, now)
	if !errors.Is(err, exchange.ErrCredentials) {
		return
	}
	testnet := strings.HasSuffix(key, exchange.TestnetSuffix)
	which, mode := "API key", ""
	if testnet {
		which, mode = "testnet API key", signal.ModeTest
	}
	s.deps.Logger.ErrorContext(ctx, "venue refused hoox's "+which+": check the key and secret, the key's trade permission and its IP whitelist; nothing was placed",
		"exchange", account, "key", key, "error", err)
	s.credMu.Lock()
	due := now.Sub(s.credAlerts[key]) >= credentialAlertEvery
	if due {
		s.credAlerts[key] = now
	}
	s.credMu.Unlock()
	if !due {
		return
	}
	ev := db.Event{TraceID: "admin:venue:" + key, Event: notify.EventVenueCredentials,
		Detail: map[string]any{"exchange": account, "key": key, "testnet": testnet, "reason": err.Error()}}
	var hook db.TxHook
	if s.deps.Notifier.Enabled(ev.Event) && s.deps.Jobs != nil {
		msg := notify.Message{Event: ev.Event, Exchange: account, Mode: mode, Time: now,
			Detail: "the venue refused hoox's " + which + ": check the key and secret, its trade permission and IP whitelist (" + err.Error() + ")"}
		hook = func(ctx context.Context, tx pgx.Tx) error { return s.deps.Notifier.InsertTx(ctx, s.deps.Jobs, tx, msg) }
	}
	if err := db.AppendEvent(ctx, s.deps.MarkerPool, ev, hook); err != nil {
		s.deps.Logger.WarnContext(ctx, "record venue credential error", "exchange", account, "key", key, "error", err)
	}
}

// settle records the order the venue holds, unless it is a market order
// the venue still reports open (executing: NEW, PARTIALLY_FILLED): what it
// executes is not known yet, so the trace reconciles and the reconcile
// follows the order until it has executed (a resting limit order is
// recorded open).
func (s *Service) settle(ctx context.Context, tx *db.ClaimTx, in Input, order exchange.Order, out *Outcome, report exchange.Report, adopted bool) (*Outcome, error) {
	if order.OrderType == "market" && report.Status == exchange.StatusOpen {
		return s.reconcile(ctx, tx, in, order, out, errors.New("the venue reports the market order still executing"))
	}
	return s.record(ctx, tx, in, order, out, report, adopted)
}

// record writes the order the venue holds (placed now or adopted) and
// settles the trace and its intent, in the claim's commit.
func (s *Service) record(ctx context.Context, tx *db.ClaimTx, in Input, order exchange.Order, out *Outcome, report exchange.Report, adopted bool) (*Outcome, error) {
	sig, tr := in.Signal, in.Trace
	rec := db.RecordReport(tr.ID, sig.Exchange, tr.Mode, order, report)
	row, status := rec.Order, rec.Status
	// The order's legs are the ones its intent holds (planned in dispatch):
	// with none, the trigger that would look for them is skipped.
	row.NoLegs = len(order.Legs) == 0
	out.Order, out.Status = row, status
	// The event is named after the trace's new status: dispatched or
	// rejected.
	event := db.EventDispatched
	if status == db.TraceRejected {
		event = db.EventRejected
	}
	var events []db.Event
	if adopted {
		rec.Detail["adopted"] = true
		events = append(events, db.Event{TraceID: tr.ID, Event: db.EventAdopted, SourceIP: in.SourceIP,
			Detail: map[string]any{"client_order_id": row.ClientOrderID, "exchange_order_id": report.ExchangeOrderID}})
	}
	events = append(events, db.Event{TraceID: tr.ID, Event: event, SourceIP: in.SourceIP, Detail: rec.Detail})
	if err := s.notify(ctx, tx, in, order, events[len(events)-1]); err != nil {
		s.deps.Logger.ErrorContext(ctx, "queue notification with the order", "trace_id", tr.ID, "error", err)
		return nil, unavailable("the order was sent but could not be recorded; retry to adopt it", 5*time.Second, err)
	}
	// An open order (a resting limit) is followed to its end by a job
	// that commits with it.
	if err := jobs.InsertFollowTx(ctx, s.deps.Jobs, tx.Tx(), row, tr.Mode, order); err != nil {
		s.deps.Logger.ErrorContext(ctx, "queue follow job with the order", "trace_id", tr.ID, "error", err)
		return nil, unavailable("the order was sent but could not be recorded; retry to adopt it", 5*time.Second, err)
	}
	recordStart := time.Now()
	err := tx.Record(ctx, db.Settlement{TraceID: tr.ID, Status: status, Order: row,
		IntentID: order.ClientOrderID, IntentOutcome: rec.IntentOutcome, Events: events})
	s.deps.Metrics.ObserveStage(StageRecord, time.Since(recordStart))
	if err != nil {
		// The venue holds the order but the commit failed: the claim rolled
		// back, and the open intent makes the next attempt (or the sweeper)
		// adopt it.
		s.deps.Logger.ErrorContext(ctx, "record order after placing it", "trace_id", tr.ID,
			"client_order_id", row.ClientOrderID, "error", err)
		return nil, unavailable("the order was sent but could not be recorded; retry to adopt it", 5*time.Second, err)
	}
	s.rememberSettled(db.ClaimedTrace{TraceID: tr.ID, Status: status, ReceivedAt: out.ReceivedAt})
	if in.land != nil && status != db.TraceRejected {
		// The copies of this signal waiting here are answered from the
		// committed trace now, not after the legs below (a copy of the
		// outcome: the legs are added to this one after).
		landed := *out
		in.land(&landed)
	}
	if status == db.TraceRejected {
		return nil, &Error{Code: codes.OrderRejected, Outcome: out,
			Detail: fmt.Sprintf("venue %s refused the order: %s", sig.Exchange, report.Reason)}
	}
	if len(order.Legs) > 0 && (row.Status == string(exchange.StatusFilled) ||
		exchange.Status(row.Status).Final() && row.FilledQuantity.Decimal.IsPositive()) {
		// The commit planned the legs (a trigger on orders: a fill, or a
		// limit entry the venue ended at once after a partial fill); place
		// them now, so the answer shows them. What cannot be decided now
		// (a lost answer, a venue out of reach) the sweeper finishes.
		legs, err := s.legs.Finish(ctx, tr.LockKey, order.ClientOrderID)
		if err != nil {
			s.deps.Logger.WarnContext(ctx, "legs left for the sweeper", "trace_id", tr.ID,
				"client_order_id", order.ClientOrderID, "error", err)
			if legs, err = db.LegOrders(ctx, s.deps.Pool, order.ClientOrderID); err != nil {
				s.deps.Logger.WarnContext(ctx, "read leg orders", "trace_id", tr.ID, "error", err)
			}
		}
		out.Legs = legs
	}
	s.exitsAfterClose(ctx, in, order, *row, report)
	return out, nil
}

// reconcile keeps a trace whose order may exist at the venue but whose answer
// was lost, and queues a River job in the same transaction to resolve it.
func (s *Service) reconcile(ctx context.Context, tx *db.ClaimTx, in Input, order exchange.Order, out *Outcome, cause error) (*Outcome, error) {
	tr := in.Trace
	s.deps.Logger.WarnContext(ctx, "venue answer unknown; reconciling", "trace_id", tr.ID,
		"client_order_id", order.ClientOrderID, "error", cause)
	args := jobs.ReconcileArgs{TraceID: tr.ID, Exchange: in.Signal.Exchange, Mode: tr.Mode, Order: order, ReceivedAt: out.ReceivedAt}
	if s.deps.Jobs == nil {
		return nil, unavailable("the venue's answer was lost and no reconciler runs; retry", 5*time.Second, cause)
	}
	if _, err := s.deps.Jobs.InsertTx(ctx, tx.Tx(), args, nil); err != nil {
		return nil, unavailable("the venue's answer was lost and the reconcile job could not be queued; retry", 5*time.Second, err)
	}
	ev := db.Event{TraceID: tr.ID, Event: db.EventReconciling, SourceIP: in.SourceIP,
		Detail: map[string]any{"client_order_id": order.ClientOrderID, "cause": cause.Error()}}
	if err := s.notify(ctx, tx, in, order, ev); err != nil {
		return nil, unavailable("the venue's answer was lost and the transaction failed; retry to adopt the order", 5*time.Second, err)
	}
	err := tx.Record(ctx, db.Settlement{TraceID: tr.ID, Status: db.TraceReconciling, ClientOrderID: order.ClientOrderID,
		IntentID: order.ClientOrderID, IntentOutcome: db.IntentReconciling, Events: []db.Event{ev}})
	if err != nil {
		return nil, unavailable("the database is unavailable; retry to adopt the order", 5*time.Second, err)
	}
	out.Status = db.TraceReconciling
	return out, nil
}
