package torture

import (
	"fmt"
	"sync"
	"time"
)

// event is one entry of the run's history: a send, an answer, a fault, an
// operator action. Signal is -1 for events that belong to no one signal
// (a replica killed at random, Postgres restarted).
type event struct {
	At      time.Duration
	Signal  int
	Kind    string
	Replica int // -1 when none
	Detail  string
	// Sent is when an operator request was sent, for events recorded at
	// its answer (At); 0 when unknown. The checker ends a kill switch's
	// window at its release's Sent: the release may commit at any moment
	// after it.
	Sent time.Duration
}

func (e event) String() string {
	rep := ""
	if e.Replica >= 0 {
		rep = fmt.Sprintf(" replica=%d", e.Replica)
	}
	sig := ""
	if e.Signal >= 0 {
		sig = fmt.Sprintf(" signal=%d", e.Signal)
	}
	sent := ""
	if e.Sent > 0 {
		sent = fmt.Sprintf(" (sent %.3fs)", e.Sent.Seconds())
	}
	return fmt.Sprintf("%9.3fs %-18s%s%s %s%s", e.At.Seconds(), e.Kind, sig, rep, e.Detail, sent)
}

// history is the append-only record the checker reads; safe for
// concurrent use.
type history struct {
	start time.Time
	mu    sync.Mutex
	evs   []event
}

func (h *history) add(signal int, kind string, replica int, format string, args ...any) {
	h.addSent(0, signal, kind, replica, format, args...)
}

// addSent records an operator request's answer, now, with when it was sent.
func (h *history) addSent(sent time.Duration, signal int, kind string, replica int, format string, args ...any) {
	e := event{At: time.Since(h.start), Signal: signal, Kind: kind, Replica: replica, Detail: fmt.Sprintf(format, args...), Sent: sent}
	h.mu.Lock()
	h.evs = append(h.evs, e)
	h.mu.Unlock()
}

func (h *history) events() []event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]event(nil), h.evs...)
}

// counter counts by kind; safe for concurrent use.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) inc(kind string) {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[kind]++
	c.mu.Unlock()
}

func (c *counter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.n {
		out[k] = v
	}
	return out
}
