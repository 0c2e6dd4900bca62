// Package pace lets background work (the purge) yield to signals: the
// gateway reports each signal's latency to a [Tracker], and the purge asks
// it how long to pause after each batch. The pause follows the signals'
// own latency, not a fixed duty cycle: with no signals arriving the purge
// runs flat out, and when the signals slow down against their own
// baseline it backs off until they recover.
package pace

import (
	"sync"
	"time"
)

// Tracker keeps a fast and a slow moving average of signal latency. The
// slow one is the baseline: it learns only while no background batch has
// run for a while, so the work it paces cannot raise its own yardstick.
// The zero value is not usable; call [New].
type Tracker struct {
	mu       sync.Mutex
	fast     float64 // EWMA, alpha fastAlpha, in seconds
	base     float64 // EWMA, alpha baseAlpha, in seconds; 0 until learned
	lastSeen time.Time
	lastWork time.Time
	// factor is the pause as a multiple of the last batch's duration.
	factor float64
	now    func() time.Time
}

const (
	fastAlpha = 0.1
	baseAlpha = 0.01
	// quiet is how long after a batch the baseline resumes learning, and
	// how long without a signal counts as no traffic to protect.
	quiet = 3 * time.Second
	// While signals arrive the pause factor moves between these bounds
	// (the ceiling keeps a third of the time for the purge, so a machine
	// slowed by something else does not stall it: the pacer cannot tell
	// that slowdown from its own, and past a few per cent of the time the
	// share the purge keeps moves the signals' p99 little but its length
	// a lot):
	// halving while the signals are within relaxed of their baseline,
	// doubling above strained. The floor keeps a third of the time free
	// for them even when they look unhurt: the average moves after the
	// tail does, and the tail is what the senders feel.
	minFactor = 0.5
	maxFactor = 2.0
	relaxed   = 1.2
	strained  = 1.5
)

// New returns a Tracker with the purge's pause at one batch's duration
// (half the time busy) until the signals say otherwise.
func New() *Tracker { return &Tracker{factor: 1, now: time.Now} }

// Observe records one signal's latency.
func (t *Tracker) Observe(d time.Duration) {
	if t == nil {
		return
	}
	s := d.Seconds()
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if t.fast == 0 {
		t.fast = s
	} else {
		t.fast += fastAlpha * (s - t.fast)
	}
	if now.Sub(t.lastWork) > quiet {
		if t.base == 0 {
			t.base = s
		} else {
			t.base += baseAlpha * (s - t.base)
		}
	}
	t.lastSeen = now
}

// Pause says how long background work waits after a batch that took
// batch: nothing when no signal arrived lately, else a multiple of the
// batch that doubles while the signals' recent latency is strained
// against their baseline and halves (to half a batch) while it is relaxed.
func (t *Tracker) Pause(batch time.Duration) time.Duration {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.lastWork = now
	if now.Sub(t.lastSeen) > quiet {
		t.factor = minFactor
		return 0
	}
	base := t.base
	if base == 0 {
		// No baseline yet (the purge started with the first signals):
		// the cautious middle.
		t.factor = max(t.factor, 1)
		return time.Duration(float64(batch) * t.factor)
	}
	switch ratio := t.fast / base; {
	case ratio > strained:
		t.factor = min(t.factor*2, maxFactor)
	case ratio < relaxed:
		t.factor = max(t.factor/2, minFactor)
	}
	return time.Duration(float64(batch) * t.factor)
}
