package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/signal"
)

// A settled trace never changes until it is purged or released (DESIGN:
// "Trace ID"), so a repeat of one needs one read and no transaction: no
// BEGIN, no timeouts, no advisory lock, no claim statement and no rollback
// afterwards (issue 21: "a settled repeat should cost one read and no write
// on the answer's path"). settledKeys remembers which trace IDs this
// replica saw settled; it only picks which path a signal tries first. The
// answer always comes from the read, never from memory: a trace released or
// purged since (on any replica) is not found there, and the signal claims
// like any other.

// settledCap bounds the memory: about 100 bytes per key.
const settledCap = 1 << 16

// settledKeys is a bounded set of trace IDs seen settled on this replica,
// oldest evicted first.
type settledKeys struct {
	mu    sync.Mutex
	until map[string]time.Time
	order []string // FIFO of the keys in until
	next  int      // where order's oldest key is, once it is full
}

// add remembers id until until (its trace's expiry, after which the purge
// may remove it).
func (k *settledKeys) add(id string, until time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.until == nil {
		k.until = map[string]time.Time{}
	}
	if _, ok := k.until[id]; ok {
		k.until[id] = until
		return
	}
	if len(k.order) < settledCap {
		k.order = append(k.order, id)
	} else {
		delete(k.until, k.order[k.next])
		k.order[k.next] = id
		k.next = (k.next + 1) % settledCap
	}
	k.until[id] = until
}

// has reports whether id was seen settled and has not expired since.
func (k *settledKeys) has(id string, now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	until, ok := k.until[id]
	return ok && now.Before(until)
}

// settledRepeat answers in from its trace's settled row when this replica
// saw the trace settled; answered is false when the signal must claim instead
// (the row is gone or not settled, a window-mode signal, the read failed).
func (s *Service) settledRepeat(ctx context.Context, in Input, lockWait time.Duration) (answered bool, err error) {
	tr := in.Trace
	if tr.Source == signal.KeyWindow || !s.settled.has(tr.ID, time.Now()) {
		return false, nil
	}
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, max(lockWait, time.Millisecond))
	t, found, rerr := db.SettledTrace(rctx, s.deps.Pool, tr.ID)
	cancel()
	s.deps.Metrics.ObserveStage(StageClaim, time.Since(start))
	if rerr != nil || !found {
		return false, nil
	}
	return true, s.repeat(ctx, nil, in, t)
}

// rememberSettled notes a trace that reached a settled status.
func (s *Service) rememberSettled(t db.ClaimedTrace) {
	if t.Status.Settled() {
		s.settled.add(t.TraceID, t.ReceivedAt.Add(s.cfg.Timing.TraceTTL))
	}
}
