package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/signal"
)

// Sweep outcomes, as counted in hoox_sweeps_total.
const (
	sweepAdopted   = "adopted"    // the venue held the order: recorded, trace settled
	sweepNotPlaced = "not_placed" // a bare intent, nothing at the venue once its window closed: no trace
	sweepMismatch  = "mismatch"   // another order under the ID: not adopted
	sweepFailed    = "failed"     // a trace ended failed (orphaned reconcile, or given up): an operator must look
	sweepLeftOpen  = "left_open"  // a bare intent not found where only a same-ID resend is safe (Bybit): left for the resend
)

// sweepBatch bounds the items one sweep handles; the next sweep takes the
// rest.
const sweepBatch = 100

// sweepLockWait is how long the sweeper waits for a trace's lock: a held
// lock means an attempt or a reconcile is live, and it is left to them.
const sweepLockWait = 200 * time.Millisecond

// SweepArgs asks for one sweep of stranded intents and orphaned reconciles.
// The River leader inserts it every SweepInterval.
type SweepArgs struct{}

// Kind names the job in River's tables.
func (SweepArgs) Kind() string { return "sweep" }

// InsertOpts: one attempt; the next periodic run is the retry.
func (SweepArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueSweep, MaxAttempts: 1}
}

// SweepWorker finishes what dead attempts left: nobody has to resend. An
// intent with no outcome after SweepGrace is an attempt that died between
// the venue call and its commit, and nobody resent the signal; a
// reconciling trace whose reconcile job ended (cancelled in River's UI,
// discarded after a database error on its last attempt) would otherwise
// stay reconciling forever. For each, under the trace's lock, the sweeper
// asks the venue — never places — and records what it finds:
//   - the order is there and matches: the order is recorded and the trace
//     created (or settled) as dispatched, so a later resend is a duplicate;
//   - nothing there once the venue's accept window has closed: a bare
//     intent is closed as not placed (the signal may be sent again); an
//     orphaned reconcile ends failed;
//   - the venue cannot be asked: retried on the next sweep, and after
//     SweepGiveUp the trace ends failed (created if need be, so the key
//     stays blocked) with a reason that says where to look.
type SweepWorker struct {
	river.WorkerDefaults[SweepArgs]
	pool     *pgxpool.Pool
	cfg      Config
	venues   *exchange.Registry
	log      *slog.Logger
	metrics  *Metrics
	notifier *Notifier
	legs     *LegRunner
}

// NewSweepWorker returns a sweeper working through pool.
func NewSweepWorker(pool *pgxpool.Pool, cfg Config, venues *exchange.Registry, logger *slog.Logger, metrics *Metrics) *SweepWorker {
	logger, metrics = orDefaults(logger, metrics)
	return &SweepWorker{pool: pool, cfg: cfg.WithDefaults(), venues: venues, log: logger, metrics: metrics,
		legs: NewLegRunner(pool, nil, cfg, venues, logger, nil)}
}

// ErrNotYet leaves an item for a later sweep: the venue's answer decides
// nothing yet (DecideLookup) — the order may still be accepted, or a
// market order is still executing.
var ErrNotYet = errors.New("not yet decidable")

// Work sweeps once.
func (w *SweepWorker) Work(ctx context.Context, _ *river.Job[SweepArgs]) error {
	_, err := w.Sweep(ctx)
	return err
}

// Sweep handles every stranded item it can now and returns how many it
// settled.
func (w *SweepWorker) Sweep(ctx context.Context) (int, error) {
	items, err := db.ListStranded(ctx, w.pool, w.cfg.SweepGrace, w.cfg.reconcileDeadAfter(), sweepBatch)
	if err != nil {
		return 0, err
	}
	// Traces whose order is unknown are asked about again, each at most
	// once per SweepGrace, so they are not blocked forever once the venue
	// answers.
	unknown, err := db.ListUnknown(ctx, w.pool, w.cfg.SweepGrace, sweepBatch)
	if err != nil {
		return 0, err
	}
	items = append(items, unknown...)
	settled := 0
	// down holds the venues (and modes) that gave no answer in this sweep:
	// their other unknown orders are left for the next sweep, so an
	// outage costs one ask per venue per sweep, not one per unknown order
	// (each a burst of queries: up to 14 for a Bybit miss), and the first
	// sweep after it asks them all.
	down := map[string]bool{}
	for _, s := range items {
		if (s.Unknown || s.LeftOpen) && down[venueKey(s.Intent.Exchange, s.Intent.Mode)] {
			continue
		}
		var outcome string
		var unanswered bool
		done, err := db.Recover(ctx, w.pool, s, sweepLockWait, w.cfg.Timing.TraceTTL, func(ctx context.Context, s db.Stranded) (db.Recovery, error) {
			r, o, err := w.decide(ctx, s, &unanswered)
			outcome = o
			for _, ev := range r.Events {
				if ev.Event == db.EventFailed {
					r.BeforeCommit = w.notifier.notifyHook(ev, s.Intent.Exchange, s.Intent.Mode, s.Intent.Order)
				}
			}
			// An order recorded open is followed to its end from this
			// commit on.
			r.BeforeCommit = chainHooks(r.BeforeCommit, followHook(r.Order, s.Intent.Mode, s.Intent.Order))
			return r, err
		})
		if unanswered {
			down[venueKey(s.Intent.Exchange, s.Intent.Mode)] = true
		}
		switch {
		case errors.Is(err, ErrNotYet), errors.Is(err, db.ErrLockTimeout):
			continue
		case err != nil:
			w.log.WarnContext(ctx, "sweep: item left for the next sweep", "trace_id", s.Intent.TraceID,
				"client_order_id", s.Intent.ClientOrderID, "error", err)
			continue
		case !done, outcome == "":
			// Not settled now, or an unknown order asked about again that
			// stays unknown (only its settled_at was refreshed).
			continue
		case outcome == sweepLeftOpen:
			// Not settled: left for the resend, and asked about again.
			w.metrics.Sweeps.WithLabelValues(outcome).Inc()
			w.log.WarnContext(ctx, "swept: not at the venue, left open for the signal's resend (same client order ID)",
				"trace_id", traceOf(s), "client_order_id", s.Intent.ClientOrderID, "exchange", s.Intent.Exchange)
			continue
		}
		settled++
		w.metrics.Sweeps.WithLabelValues(outcome).Inc()
		level := slog.LevelInfo
		if outcome == sweepFailed || outcome == sweepMismatch {
			level = slog.LevelError
		}
		w.log.Log(ctx, level, "swept", "trace_id", traceOf(s), "client_order_id", s.Intent.ClientOrderID,
			"outcome", outcome, "orphaned_reconcile", s.TraceID != "")
		if outcome == sweepAdopted && len(s.Intent.Order.Legs) > 0 && s.Intent.LockKey != "" {
			// The primary just recorded planned its legs: place them now,
			// not a sweep later.
			if _, err := w.legs.Finish(ctx, s.Intent.LockKey, s.Intent.ClientOrderID); err != nil {
				w.log.WarnContext(ctx, "sweep: legs left for the next sweep", "trace_id", traceOf(s), "error", err)
			}
		}
	}
	// Legs (issue 19) an attempt left unplaced or unknown when it died:
	// finished as the gateway would have, each trace's under its lock.
	open, err := db.ListOpenLegs(ctx, w.pool, w.cfg.SweepGrace, sweepBatch)
	if err != nil {
		return settled, err
	}
	for _, o := range open {
		_, err := w.legs.Finish(ctx, o.LockKey, o.ParentClientOrderID)
		switch {
		case err == nil:
			settled++
			w.log.InfoContext(ctx, "swept legs", "trace_id", o.TraceID, "parent_client_order_id", o.ParentClientOrderID)
		case errors.Is(err, ErrNotYet), errors.Is(err, db.ErrLockTimeout):
		default:
			w.log.WarnContext(ctx, "sweep: legs left for the next sweep", "trace_id", o.TraceID,
				"parent_client_order_id", o.ParentClientOrderID, "error", err)
		}
	}
	// Legs failed with their order unknown (a missed exit at a venue
	// that may book a late request) are asked about again, each at most
	// once per SweepGrace: an order that turns up is recorded and
	// followed (README "A missed trade").
	unknownLegs, err := db.ListUnknownLegs(ctx, w.pool, w.cfg.SweepGrace, sweepBatch)
	if err != nil {
		return settled, err
	}
	for _, l := range unknownLegs {
		key := venueKey(l.Exchange, l.Mode)
		if down[key] {
			continue
		}
		outcome, unanswered, err := w.legs.askUnknown(ctx, l)
		if unanswered {
			down[key] = true
		}
		switch {
		case errors.Is(err, db.ErrLockTimeout):
			continue
		case err != nil:
			w.log.WarnContext(ctx, "sweep: unknown leg left for the next sweep", "trace_id", l.TraceID,
				"client_order_id", l.ClientOrderID, "error", err)
			continue
		case outcome == "":
			continue
		}
		settled++
		label, level := sweepAdopted, slog.LevelInfo
		switch outcome {
		case db.IntentNotPlaced:
			label = sweepResolved
		case db.IntentKeyReused:
			label, level = sweepMismatch, slog.LevelError
		}
		w.metrics.Sweeps.WithLabelValues(label).Inc()
		w.log.Log(ctx, level, "swept unknown leg", "trace_id", l.TraceID, "client_order_id", l.ClientOrderID,
			"role", l.Role, "outcome", outcome)
	}
	return settled, nil
}

func traceOf(s db.Stranded) string {
	if s.TraceID != "" {
		return s.TraceID
	}
	return s.Intent.TraceID
}

// venueKey names a venue in one mode, for the sweep's record of venues
// that gave no answer.
func venueKey(exchange, mode string) string { return exchange + "|" + mode }

// noAnswer reports whether a lookup's error err means that the venue gave
// no answer — unreachable, rate limited, the key refused, an outcome
// unknown — which the sweep takes for the venue being down for the rest
// of its pass. A refusal of this one request (the venue's own answer that
// it does not take the request's parameters: an adapter's rejected or
// filter class) is an answer: the venue is up, and a lookup that fails
// for one order's own reason at every sweep must not keep the sweep from
// asking about the venue's other unknown orders.
func noAnswer(err error) bool {
	var refusal interface{ Refused() bool }
	return !(errors.As(err, &refusal) && refusal.Refused())
}

// decide asks the venue about one stranded item; it sets *unanswered when
// the venue gave no answer (noAnswer).
func (w *SweepWorker) decide(ctx context.Context, s db.Stranded, unanswered *bool) (db.Recovery, string, error) {
	in := s.Intent
	traceID := traceOf(s)
	if s.Unknown {
		return w.decideUnknown(ctx, s, unanswered)
	}
	if s.NoIntent {
		return giveUp(s.Intent, traceOf(s), "its reconcile job ended without settling it and no intent says which order to look for: check the venue"), sweepFailed, nil
	}
	venue, ok := w.venues.For(in.Exchange, in.Mode == signal.ModeTest)
	if !ok {
		return w.unanswered(s, fmt.Errorf("venue %q is not configured on this replica", in.Exchange))
	}
	vctx, cancel := context.WithTimeout(ctx, w.cfg.Timing.VenueTimeout)
	defer cancel()
	report, err := venue.Lookup(vctx, in.Order)
	if s.TraceID == "" && errors.Is(err, exchange.ErrNotFound) && in.SentAgo >= venue.AcceptWindow() && leftForTheResend(venue, in.Order) {
		return leaveOpen(s)
	}
	r, outcome, err := DecideLookup(in, traceID, s.TraceID == "", venue, report, err)
	if errors.Is(err, ErrUnanswered) {
		*unanswered = noAnswer(err)
		w.venues.NoteError(in.Exchange, err, w.cfg.Timing.Clock())
		return w.unanswered(s, err)
	}
	return r, outcome, err
}

// leftForTheResend reports whether a dead attempt's order o, not found at
// v past its accept window, is left open for the signal's resend rather
// than ended as a missed trade: v may still book the original late (it
// proves nothing absent), but never takes one client order ID twice
// (exchange.IDKeeper: Bybit, whose orderLinkId is "always unique",
// create-order.mdx:74, a second create under it refused with 110072,
// error.mdx:133). The resend then sends it again under that ID — one
// order whichever of the two Bybit books (the gateway's pending branch,
// as for a resend before the sweep) — and the sweeper keeps looking for
// the original, recording it if Bybit books it. The sweeper itself never
// places: the sender was answered nothing, and decides whether to trade
// (as where a venue proves the order absent and the key is freed).
func leftForTheResend(v exchange.Venue, o exchange.Order) bool {
	return exchange.ResendsSameID(v, o) && !exchange.RefusesLateOrder(v, o)
}

// leaveOpen leaves bare intent s open after its venue answered that it
// holds no order under its ID (leftForTheResend): it marks the ask
// answered, which spaces the next asks (db.Stranded.LeftOpen), and the
// first time writes the swept event and counts it.
func leaveOpen(s db.Stranded) (db.Recovery, string, error) {
	r := db.Recovery{Answered: true}
	if s.LeftOpen {
		return r, "", nil
	}
	r.Events = []db.Event{{TraceID: s.Intent.TraceID, Event: db.EventSwept, Detail: map[string]any{
		"found": false, "client_order_id": s.Intent.ClientOrderID, "left_open": true,
		"reason": fmt.Sprintf("order %s is not at %s past its window, which may still book the dead attempt's request: "+
			"left open, a resend of the signal sends it under the same ID (one order whichever arrives), and it is asked about again",
			s.Intent.ClientOrderID, s.Intent.Exchange)}}}
	return r, sweepLeftOpen, nil
}

// ErrUnanswered wraps a lookup's error when the venue gave no answer
// (DecideLookup): the caller decides how long to wait for one.
var ErrUnanswered = errors.New("the venue did not answer the lookup")

// DecideLookup is how an open intent ends, given the venue's answer to its
// lookup (report, err): the one decision the sweeper makes for a stranded
// item and the gateway for a dead earlier window execution it recovers
// itself. traceID is the trace the events go to; bare says no trace
// exists yet (nobody was answered about this order). It returns the
// recovery with its sweep outcome, ErrNotYet while nothing can be decided,
// or an error wrapping ErrUnanswered when the venue gave no answer.
func DecideLookup(in db.Intent, traceID string, bare bool, venue exchange.Venue, report exchange.Report, err error) (db.Recovery, string, error) {
	if errors.Is(err, exchange.ErrNotFound) && in.SentAgo < venue.AcceptWindow() {
		// The request may still be accepted, or the lookup lag it: a
		// found order is recorded at once, "not found" only counts later.
		return db.Recovery{}, "", ErrNotYet
	}
	switch {
	case err == nil && stillExecuting(in.Order, report) && in.SentAgo < followOpenMarket:
		// A market order still executing: its fill is not known yet; the
		// next sweep looks again.
		return db.Recovery{}, "", ErrNotYet
	case err == nil:
		rec := db.RecordReport(traceID, in.Exchange, in.Mode, in.Order, report)
		rec.Detail["found"], rec.Detail["exchange_order_id"] = true, report.ExchangeOrderID
		return db.Recovery{TraceStatus: rec.Status, Order: rec.Order, IntentOutcome: rec.IntentOutcome,
			Events: []db.Event{{TraceID: traceID, Event: db.EventSwept, Detail: rec.Detail}}}, sweepAdopted, nil
	case errors.Is(err, exchange.ErrNotFound) && !exchange.RefusesLate(venue):
		// The venue may still fill the request late (Binance spot): "not
		// found" proves nothing, so neither is the key freed (a bare
		// intent's trace is created failed, so a resend is a duplicate)
		// nor anything sent again. A missed trade, for an operator.
		return giveUp(in, traceID, missedReason(in.ClientOrderID, in.Exchange)), sweepFailed, nil
	case errors.Is(err, exchange.ErrNotFound):
		if bare {
			// A bare intent: no trace, no answer given; the signal may be
			// sent again.
			return db.Recovery{IntentOutcome: db.IntentNotPlaced, Events: []db.Event{{TraceID: traceID, Event: db.EventSwept,
				Detail: map[string]any{"found": false, "client_order_id": in.ClientOrderID}}}}, sweepNotPlaced, nil
		}
		// An orphaned reconcile: its sender was told 202 reconciling and the
		// trace now ends failed, which an operator must see (failed metric,
		// error log), not a routine "not placed".
		return db.Recovery{TraceStatus: db.TraceFailed, IntentOutcome: db.IntentNotPlaced,
			Events: []db.Event{{TraceID: traceID, Event: db.EventFailed, Detail: map[string]any{"client_order_id": in.ClientOrderID,
				"reason": fmt.Sprintf("its reconcile job ended without settling it; the venue holds no order %s: not placed", in.ClientOrderID)}}}}, sweepFailed, nil
	case errors.Is(err, exchange.ErrMismatch):
		r := db.Recovery{IntentOutcome: db.IntentKeyReused, Events: []db.Event{{TraceID: traceID, Event: db.EventFailed,
			Detail: map[string]any{"client_order_id": in.ClientOrderID,
				"reason": fmt.Sprintf("the venue holds a different order under %s (%v): not adopted", in.ClientOrderID, err)}}}}
		if !bare {
			r.TraceStatus = db.TraceFailed
		}
		return r, sweepMismatch, nil
	}
	return db.Recovery{}, "", fmt.Errorf("%w: %w", ErrUnanswered, err)
}

// sweepResolved counts an unknown order proven absent: the trace stays
// failed, its key now free to release or purge.
const sweepResolved = "resolved"

// decideUnknown asks the venue again about a trace that ended failed with
// its order unknown. The order found is recorded (the trace settles as
// dispatched or rejected); proven absent (a venue that refuses late
// requests, past its window) settles the intent not_placed; another order
// under the ID settles it key_reused. Otherwise the intent is only marked
// asked (its settled_at refreshed, and its asked_at when the venue
// answered; outcome "", not counted) and stays unknown.
func (w *SweepWorker) decideUnknown(ctx context.Context, s db.Stranded, unanswered *bool) (db.Recovery, string, error) {
	in := s.Intent
	stillUnknown := db.Recovery{IntentOutcome: db.IntentFailed}
	venue, ok := w.venues.For(in.Exchange, in.Mode == signal.ModeTest)
	if !ok {
		return stillUnknown, "", nil
	}
	vctx, cancel := context.WithTimeout(ctx, w.cfg.Timing.VenueTimeout)
	defer cancel()
	report, err := venue.Lookup(vctx, in.Order)
	switch {
	case err == nil && stillExecuting(in.Order, report):
		return stillUnknown, "", nil
	case err == nil:
		rec := db.RecordReport(s.TraceID, in.Exchange, in.Mode, in.Order, report)
		rec.Detail["found"], rec.Detail["exchange_order_id"], rec.Detail["was_unknown"] = true, report.ExchangeOrderID, true
		return db.Recovery{TraceStatus: rec.Status, Order: rec.Order, IntentOutcome: rec.IntentOutcome,
			Events: []db.Event{{TraceID: s.TraceID, Event: db.EventSwept, Detail: rec.Detail}}}, sweepAdopted, nil
	case errors.Is(err, exchange.ErrNotFound) && exchange.RefusesLate(venue) && in.SentAgo >= venue.AcceptWindow():
		return db.Recovery{IntentOutcome: db.IntentNotPlaced, Events: []db.Event{{TraceID: s.TraceID, Event: db.EventSwept,
			Detail: map[string]any{"found": false, "client_order_id": in.ClientOrderID, "was_unknown": true}}}}, sweepResolved, nil
	case errors.Is(err, exchange.ErrMismatch):
		return db.Recovery{IntentOutcome: db.IntentKeyReused, Events: []db.Event{{TraceID: s.TraceID, Event: db.EventSwept,
			Detail: map[string]any{"found": false, "client_order_id": in.ClientOrderID, "was_unknown": true,
				"reason": fmt.Sprintf("the venue holds a different order under %s (%v)", in.ClientOrderID, err)}}}}, sweepResolved, nil
	case errors.Is(err, exchange.ErrNotFound):
		// Answered, deciding nothing: the next asks are spaced
		// (db.Recovery.Answered).
		stillUnknown.Answered = true
	case err != nil:
		*unanswered = noAnswer(err)
		w.venues.NoteError(in.Exchange, err, w.cfg.Timing.Clock())
	}
	return stillUnknown, "", nil
}

// unanswered leaves an item whose venue could not answer for a later sweep,
// until SweepGiveUp has passed since its send.
//
// An intent left open for the resend (db.Stranded.LeftOpen) is never
// given up: the venue answered about it before, the resend asks before
// it sends, and it stays as unknown as it was.
func (w *SweepWorker) unanswered(s db.Stranded, err error) (db.Recovery, string, error) {
	if s.Intent.SentAgo < w.cfg.SweepGiveUp || s.LeftOpen {
		return db.Recovery{}, "", fmt.Errorf("%w: %w", ErrNotYet, err)
	}
	return giveUp(s.Intent, traceOf(s), fmt.Sprintf("venue %s could not be asked for %s (%v); whether order %s exists is unknown: check the venue",
		s.Intent.Exchange, w.cfg.SweepGiveUp, err, s.Intent.ClientOrderID)), sweepFailed, nil
}

// giveUp fails the trace (creating it from the intent when there is none,
// so the key stays blocked while nobody knows whether the order exists).
func giveUp(in db.Intent, traceID, reason string) db.Recovery {
	return db.Recovery{TraceStatus: db.TraceFailed, IntentOutcome: db.IntentFailed,
		Events: []db.Event{{TraceID: traceID, Event: db.EventFailed,
			Detail: map[string]any{"client_order_id": in.ClientOrderID, "reason": reason}}}}
}
