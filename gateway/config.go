package gateway

import (
	"time"

	"github.com/hoox/hoox/internal/confcheck"
)

// Bounds of Config.LockWait. Postgres reads lock_timeout in whole
// milliseconds and 0 means wait forever, so the floor is 1 ms. TradingView
// gives up on a webhook after 3 s; a repeat must get its in_progress answer
// before that, with half a second left for the network and the claim's other
// statements, so the ceiling is 2.5 s.
const (
	MinLockWait = time.Millisecond
	MaxLockWait = 2500 * time.Millisecond
)

// Config holds the gateway's timing rules. Zero values take the defaults of
// DefaultConfig (see WithDefaults); Validate refuses values that would turn
// a protection off.
type Config struct {
	// TraceTTL is how long a trace ID blocks repeats (HOOX_TRACE_TTL).
	// Default 24h; at least DedupWindow.
	TraceTTL time.Duration
	// DedupWindow is the sliding window for signals with neither a client
	// key nor a timestamp (HOOX_DEDUP_WINDOW). Default 60s; at least 1 ms
	// (it is stored in milliseconds) and at most TraceTTL.
	DedupWindow time.Duration
	// LockWait is how long a repeat waits for the first attempt
	// (HOOX_LOCK_WAIT). Default 2s; between MinLockWait and MaxLockWait.
	LockWait time.Duration
	// VenueTimeout bounds one venue call; past it the answer counts as lost
	// and the trace is reconciled (HOOX_VENUE_TIMEOUT). Default 10s; above
	// zero, or every placement would count as lost.
	VenueTimeout time.Duration
	// Now is this replica's clock (nil: time.Now). Only durations between
	// two of its own readings are taken from it (a signal's wait, the
	// window between two arrivals); whether a window that Postgres stamped
	// has passed is judged by Postgres's now() in the query (DESIGN: "One
	// clock per judgement"). Tests and skew drills set it.
	Now func() time.Time
}

// now reads c.Now, or the system clock when it is nil.
func (c Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// DefaultConfig holds the defaults the README's configuration table lists.
func DefaultConfig() Config {
	return Config{TraceTTL: 24 * time.Hour, DedupWindow: 60 * time.Second, LockWait: 2 * time.Second, VenueTimeout: 10 * time.Second}
}

// WithDefaults returns c with every zero field set to DefaultConfig's. A
// caller that must refuse an explicit zero (cmd/hoox, mapping an operator's
// HOOX_LOCK_WAIT=0) validates before, not after.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	if c.TraceTTL == 0 {
		c.TraceTTL = d.TraceTTL
	}
	if c.DedupWindow == 0 {
		c.DedupWindow = d.DedupWindow
	}
	if c.LockWait == 0 {
		c.LockWait = d.LockWait
	}
	if c.VenueTimeout == 0 {
		c.VenueTimeout = d.VenueTimeout
	}
	return c
}

// Validate refuses settings that would disable a protection. Its errors are
// *confcheck.Error values naming the field (Config "gateway"), all of them
// joined.
func (c Config) Validate() error {
	ck := confcheck.New("gateway")
	ck.Duration("LockWait", c.LockWait, MinLockWait, MaxLockWait,
		lockWaitWhy(c.LockWait))
	ck.Duration("DedupWindow", c.DedupWindow, time.Millisecond, 0,
		"; 0 or less would never hold a signal without a key or timestamp back")
	ck.Duration("TraceTTL", c.TraceTTL, time.Millisecond, 0,
		"; 0 or less would let every repeat through")
	if c.DedupWindow > 0 && c.TraceTTL > 0 && c.DedupWindow > c.TraceTTL {
		ck.Refuse("DedupWindow", c.DedupWindow.String(),
			"must not exceed the trace TTL ("+c.TraceTTL.String()+"): a window trace expires with the TTL, so a longer window is a promise the purge breaks")
	}
	ck.Duration("VenueTimeout", c.VenueTimeout, time.Millisecond, 0,
		"; 0 or less would count every placement as lost")
	return ck.Err()
}

func lockWaitWhy(d time.Duration) string {
	switch {
	case d < MinLockWait && d >= 0:
		return "; 0 would make Postgres wait forever for a held trace"
	case d > MaxLockWait:
		return "; TradingView gives up after 3s, so a repeat must get its in_progress answer before that"
	}
	return ""
}
