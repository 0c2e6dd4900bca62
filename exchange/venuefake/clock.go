package venuefake

import (
	"sync"
	"time"
)

// Clock is a fake's clock: the test's (time.Now when nil) plus whatever
// Advance added, so that a test moves the venue's time without sleeping.
// It is safe for concurrent use and takes no lock of the fake's.
type Clock struct {
	mu      sync.Mutex
	base    func() time.Time
	advance time.Duration
}

// NewClock is a Clock on base (time.Now when nil).
func NewClock(base func() time.Time) *Clock {
	if base == nil {
		base = time.Now
	}
	return &Clock{base: base}
}

// Now is the fake's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.base().Add(c.advance)
}

// Advance moves the fake's time by d (negative d moves it back).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advance += d
}
