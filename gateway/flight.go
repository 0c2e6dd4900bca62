package gateway

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/signal"
)

// A storm of one signal (a strategy or a proxy resending it, hundreds of
// times at once) must neither place it twice nor starve other signals of
// database connections. Within one replica the copies of a signal queue
// behind the first one here, in memory, instead of each holding a claim
// connection while it waits for the trace's advisory lock; when the first
// ends with a settled trace, the rest are answered from it at once. Nothing
// here decides what is placed: a copy that cannot be answered from the
// first one's outcome claims in the database like any signal, where the
// advisory lock and the unique index decide as always.

// flight is the attempt of one lock key running on this replica: the
// leading copy, and its answer once done is closed. Only the copies that
// waited read the answer (settledBy), so a signal nobody copies pays for
// nothing but the flight itself.
type flight struct {
	done chan struct{}
	once sync.Once
	// lead is what the copies read of the leading copy: its lock key,
	// fingerprint and arrival, not the whole Input (a repeat storm makes
	// a flight per copy that finds none running, so its size is a
	// repeat's cost: issue 21).
	lead flightLead
	out  *Outcome
	err  error
}

// flightLead is the part of a flight's leading Input its copies read.
type flightLead struct {
	lockKey, fingerprint string
	arrived              time.Time
}

type flights struct {
	mu sync.Mutex
	m  map[string]*flight
	// waiting counts copies queued behind a flight.
	waiting atomic.Int64
}

// join returns key's flight and whether the caller leads it: a leader
// must call land when its attempt ends.
func (fs *flights) join(lead Input) (*flight, bool) {
	key := lead.Trace.LockKey
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f, ok := fs.m[key]; ok {
		return f, false
	}
	f := &flight{done: make(chan struct{}),
		lead: flightLead{lockKey: key, fingerprint: lead.Trace.Fingerprint, arrived: lead.Arrived}}
	fs.m[key] = f
	return f, true
}

// land ends f with its answer, once: at the leader's commit (Input.land,
// before its legs are placed) or when its attempt returns, whichever comes
// first.
func (fs *flights) land(f *flight, out *Outcome, err error) {
	f.once.Do(func() {
		fs.mu.Lock()
		delete(fs.m, f.lead.lockKey)
		fs.mu.Unlock()
		f.out, f.err = out, err
		close(f.done)
	})
}

// coalesce runs in's attempt, or, when a copy of it is already in flight
// here, waits for that one (at most LockWait in all, as for the lock).
func (s *Service) coalesce(ctx context.Context, in Input, venue exchange.Venue) (*Outcome, error) {
	f, leader := s.flights.join(in)
	if leader {
		var out *Outcome
		var err error
		// Deferred, so a panicking attempt still lets its copies go (to
		// the database: a nil answer settles nothing).
		defer func() { s.flights.land(f, out, err) }()
		// Landed as soon as the trace commits (record), not after the
		// order's legs: a copy arriving while they are placed is answered
		// by the database — a duplicate at once, or, if an operator
		// released the key in between, a new execution — never from an
		// answer older than itself, nor held for the legs' venue calls.
		in.land = func(o *Outcome) { s.flights.land(f, o, nil) }
		out, err = s.claim(ctx, in, venue, s.cfg.Timing.LockWait)
		return out, err
	}
	start := s.cfg.Timing.Clock()
	wait := time.NewTimer(s.cfg.Timing.LockWait)
	defer wait.Stop()
	s.flights.waiting.Add(1)
	defer s.flights.waiting.Add(-1)
	select {
	case <-f.done:
	case <-wait.C:
		return nil, s.inProgress(in.Trace.ID)
	case <-ctx.Done():
		return nil, unavailable("the request ended while an earlier copy of this signal was still running; nothing was placed by it", 5*time.Second, ctx.Err())
	}
	if t, fresh := settledBy(f.lead.fingerprint, f.out, f.err); t != nil && s.repeats(in, f, t, fresh) {
		e, ev := repeatAnswer(in, *t)
		if e.Code == codes.Duplicate && in.Signal.Action == signal.ActionCancel {
			// A cancel's outcome is what it cancelled, as repeat answers it.
			e.Original.Cancelled = cancelledBy(f)
		}
		s.repeatEvents.add(s, ev)
		return nil, e
	}
	left := s.cfg.Timing.LockWait - s.cfg.Timing.Clock().Sub(start)
	if left < minClaimWait {
		// Its wait is spent: it waited out the first copy, which ended
		// unsettled a moment ago. Too little is left for a claim (a
		// connection and the lock), whose timeout would read as hoox
		// being at capacity; the answer is the lock wait's.
		return nil, s.inProgress(in.Trace.ID)
	}
	return s.claim(ctx, in, venue, left)
}

// cancelledBy is what the cancel f's attempt answered for cancelled: its
// own list when it executed, its original's when it was a repeat.
func cancelledBy(f *flight) []db.OrderRow {
	if e, ok := f.err.(*Error); ok && e.Original != nil {
		return e.Original.Cancelled
	}
	if f.out != nil {
		return f.out.Cancelled
	}
	return nil
}

// minClaimWait is the least wait a copy that leaves a flight takes into its
// claim.
const minClaimWait = 50 * time.Millisecond

// repeats reports whether in, a copy that waited for f, repeats t, the
// settled trace f's attempt left: the same trace ID, or — in window mode,
// where every arrival has its own ID — arriving inside the dedup window of
// the trace f's leader created (fresh). (Same lock key means the same
// fingerprint in window mode.) Anything else asks the database.
func (s *Service) repeats(in Input, f *flight, t *db.ClaimedTrace, fresh bool) bool {
	if t.TraceID == in.Trace.ID {
		return true
	}
	return in.Trace.Source == signal.KeyWindow && fresh && in.Arrived.Sub(f.lead.arrived) < s.cfg.DedupWindow
}

// settledBy is the trace an attempt's answer shows committed and settled,
// and whether the attempt created it: its own placement or rejection
// (fresh), or the settled original it repeated. Nil when the copies must
// ask the database (rolled back, reconciling, kill switch, …).
func settledBy(fingerprint string, out *Outcome, err error) (*db.ClaimedTrace, bool) {
	if e, ok := err.(*Error); ok {
		if e.Code == codes.Duplicate && e.Original != nil && e.Original.Status.Settled() {
			o := e.Original
			// A duplicate's original has this attempt's fingerprint.
			return &db.ClaimedTrace{TraceID: o.TraceID, Fingerprint: fingerprint, Status: o.Status,
				OrderID: o.OrderID, ClientOrderID: o.ClientOrderID, ReceivedAt: o.FirstSeen}, false
		}
		out = e.Outcome
	}
	if out == nil || out.Order == nil || !out.Status.Settled() {
		return nil, false
	}
	return &db.ClaimedTrace{TraceID: out.TraceID, Fingerprint: fingerprint, Status: out.Status,
		OrderID: &out.Order.ID, ClientOrderID: &out.Order.ClientOrderID, ReceivedAt: out.ReceivedAt}, true
}

// repeatLinger is how long the first repeat event of a batch waits for
// others before they are written. At 1,000 repeats/s, 20 ms makes batches
// of about 20 instead of about 5 at 2 ms: Postgres spent 85–96 µs per
// repeat instead of 126–154 (three pairs of runs, issue 21, ninth round),
// and those repeats' audit rows commit at most 20 ms after their answers.
const repeatLinger = 20 * time.Millisecond

// eventBatch writes the audit events of repeats answered from a flight,
// many per round trip, after their answers (like any repeat's).
type eventBatch struct {
	mu      sync.Mutex
	pending []db.Event
	// spare is the last written batch's slice, emptied, for the next
	// batch to fill: a storm of repeats does not grow a new one each
	// time (issue 21).
	spare   []db.Event
	writing bool
}

func (b *eventBatch) add(s *Service, ev db.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending = append(b.pending, ev)
	if b.writing {
		return
	}
	b.writing = true
	s.background.Add(1)
	go func() {
		defer s.background.Done()
		// Let a few more repeats join the first one's write: one
		// statement and one commit for many (issue 21). The rows commit
		// after their answers either way; this only widens that by
		// repeatLinger.
		time.Sleep(repeatLinger)
		for {
			b.mu.Lock()
			events := b.pending
			b.pending, b.spare = b.spare, nil
			if len(events) == 0 {
				b.writing = false
				b.mu.Unlock()
				return
			}
			b.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if err := db.AppendRepeatEvents(ctx, s.deps.Pool, events); err != nil {
				s.deps.Logger.WarnContext(ctx, "record repeat events", "events", len(events), "error", err)
			}
			cancel()
			clear(events)
			b.mu.Lock()
			b.spare = events[:0]
			b.mu.Unlock()
		}
	}()
}
