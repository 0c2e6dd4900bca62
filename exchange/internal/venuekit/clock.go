package venuekit

import (
	"context"
	"sync"
	"time"
)

// Clock is a venue's clock as estimated from the local one: the offset
// measured by reading the venue's server time, assuming the answer was
// stamped halfway through the round trip. Requests are stamped with it so
// that a drifting host clock does not get them refused.
type Clock struct {
	// Now is the local clock.
	Now func() time.Time
	// Interval is how long a measured offset is trusted.
	Interval time.Duration

	syncMu sync.Mutex // one measurement at a time

	mu       sync.Mutex
	offset   time.Duration // venue's clock minus the local one
	syncedAt time.Time     // local time of the last measurement; zero forces one
}

// Fresh reports whether the offset was measured less than Interval ago.
func (c *Clock) Fresh() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.syncedAt.IsZero() && c.Now().Sub(c.syncedAt) < c.Interval
}

// Offset is the venue's clock minus the local one, as last measured.
func (c *Clock) Offset() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.offset
}

// At is the venue's clock at local time t.
func (c *Clock) At(t time.Time) time.Time { return t.Add(c.Offset()) }

// ServerNow is the venue's clock now.
func (c *Clock) ServerNow() time.Time { return c.At(c.Now()) }

// Forget distrusts the offset (the venue refused a timestamp): the next
// Ensure measures it again.
func (c *Clock) Forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.syncedAt = time.Time{}
}

// Ensure measures the offset with read unless it is fresh. Concurrent
// callers wait for one measurement rather than each sending one. measured
// is true when this call read the venue's time.
func (c *Clock) Ensure(ctx context.Context, read func(context.Context) (time.Time, error)) (measured bool, err error) {
	if c.Fresh() {
		return false, nil
	}
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	if c.Fresh() {
		return false, nil // another request measured while this one waited
	}
	t0 := c.Now()
	server, err := read(ctx)
	if err != nil {
		return false, err
	}
	t1 := c.Now()
	c.mu.Lock()
	c.offset, c.syncedAt = server.Sub(t0.Add(t1.Sub(t0)/2)), t1
	c.mu.Unlock()
	return true, nil
}
