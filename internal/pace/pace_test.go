package pace

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// clock is a hand-driven time source.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newTracker(c *clock) *Tracker       { tr := New(); tr.now = c.now; return tr }
func (c *clock) signals(tr *Tracker, n int, d time.Duration) {
	for range n {
		c.advance(5 * time.Millisecond)
		tr.Observe(d)
	}
}

func TestNoSignalsRunsFlatOut(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(0, 0)}
	tr := newTracker(c)
	require.Zero(t, tr.Pause(100*time.Millisecond))
	var nilTracker *Tracker
	require.Zero(t, nilTracker.Pause(time.Second))
	nilTracker.Observe(time.Second)
}

func TestBacksOffWhileSignalsSlowAndRecovers(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(0, 0)}
	tr := newTracker(c)
	c.signals(tr, 500, 5*time.Millisecond) // the baseline: 5 ms
	batch := 100 * time.Millisecond

	// Signals at their baseline: the pause shrinks to half a batch.
	var p time.Duration
	for range 6 {
		c.signals(tr, 10, 5*time.Millisecond)
		p = tr.Pause(batch)
	}
	require.Equal(t, batch/2, p)

	// Signals three times slower: the pause grows with every batch, up
	// to two batches.
	var last time.Duration
	for range 2 {
		c.signals(tr, 20, 15*time.Millisecond)
		p = tr.Pause(batch)
		require.Greater(t, p, last)
		last = p
	}
	c.signals(tr, 20, 15*time.Millisecond)
	require.Equal(t, 2*batch, tr.Pause(batch))
	// The baseline did not learn the slow signals while batches ran.
	require.InDelta(t, 0.005, tr.base, 0.0005)

	// They recover: the pause shrinks again.
	for range 8 {
		c.signals(tr, 30, 5*time.Millisecond)
		p = tr.Pause(batch)
	}
	require.Less(t, p, last)
}

func TestNoSignalsLatelyMeansNoPause(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(0, 0)}
	tr := newTracker(c)
	c.signals(tr, 100, 5*time.Millisecond)
	c.signals(tr, 20, 50*time.Millisecond)
	require.NotZero(t, tr.Pause(100*time.Millisecond))
	c.advance(10 * time.Second)
	require.Zero(t, tr.Pause(100*time.Millisecond))
}
