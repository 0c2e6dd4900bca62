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
//
// The venue's clock is reckoned from the measurement forward on the local
// monotonic clock (At), not as the local wall clock plus the offset: a
// host clock stepped forward after the measurement (NTP) would otherwise
// stamp requests that far in the venue's future, and a request's expiry
// (OKX's expTime, Bybit's and Binance's recvWindow) would reach later than
// hoox reckons when it decides that a request it lost can no longer be
// taken.
type Clock struct {
	// Now is the local clock.
	Now func() time.Time
	// Interval is how long a measured offset is trusted.
	Interval time.Duration

	syncMu sync.Mutex // one measurement at a time

	mu       sync.Mutex
	offset   time.Duration // venue's clock minus the local one
	syncedAt time.Time     // local time of the last measurement; zero forces one
	server   time.Time     // the venue's clock at local
	local    time.Time     // the local time (monotonic reading included) the venue's answer is taken to be stamped at
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

// At is the venue's clock at local time t: the measured venue time plus
// the local time elapsed since, on the monotonic clock when t carries a
// reading (time.Now's values do); before any measurement, t itself.
func (c *Clock) At(t time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.local.IsZero() {
		return t.Add(c.offset)
	}
	return c.server.Add(t.Sub(c.local))
}

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
	mid := t0.Add(t1.Sub(t0) / 2)
	c.mu.Lock()
	c.offset, c.syncedAt, c.server, c.local = server.Sub(mid), t1, server, mid
	c.mu.Unlock()
	return true, nil
}
