package venuekit

import (
	"sync"
	"time"
)

// FilterCache keeps each symbol's trading rules (F, the adapter's own
// type) for a TTL. found=false is cached too: the venue does not list the
// symbol. Drop forgets a symbol at once, after the venue refused an order
// on a filter the cache allowed.
type FilterCache[F any] struct {
	mu sync.Mutex
	m  map[string]filterEntry[F]
}

type filterEntry[F any] struct {
	f       F
	found   bool
	fetched time.Time
}

// Get returns symbol's cached rules while younger than ttl at now; ok is
// false when they must be read from the venue.
func (c *FilterCache[F]) Get(symbol string, now time.Time, ttl time.Duration) (f F, found, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, cached := c.m[symbol]
	if !cached || now.Sub(e.fetched) >= ttl {
		return f, false, false
	}
	return e.f, e.found, true
}

// Put caches symbol's rules as read at now.
func (c *FilterCache[F]) Put(symbol string, f F, found bool, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]filterEntry[F]{}
	}
	c.m[symbol] = filterEntry[F]{f: f, found: found, fetched: now}
}

// Drop forgets symbol's rules: the next order reads them again.
func (c *FilterCache[F]) Drop(symbol string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, symbol)
}
