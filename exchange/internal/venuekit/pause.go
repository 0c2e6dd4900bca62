package venuekit

import (
	"sync"
	"time"
)

// Pauses are rate-limit silences a venue asked for: per key (an endpoint's
// path, or "" for every request), the local time before which requests
// fail fast with "nothing sent" instead of reaching the venue.
type Pauses struct {
	mu sync.Mutex
	m  map[string]time.Time
}

// Pause holds key until until; a longer pause already in force stays.
func (p *Pauses) Pause(key string, until time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]time.Time{}
	}
	if until.After(p.m[key]) {
		p.m[key] = until
	}
}

// Until reports whether a request under any of keys must wait at now, and
// until when. Pauses that have ended are forgotten.
func (p *Pauses) Until(now time.Time, keys ...string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range keys {
		if until, ok := p.m[k]; ok {
			if now.Before(until) {
				return until, true
			}
			delete(p.m, k)
		}
	}
	return time.Time{}, false
}
