// Package timing declares the settings that more than one package reads,
// once: the trace TTL, the lock wait, the venue timeout and the signal age.
// The gateway, the jobs and the HTTP layer each hold a Config (their
// Config.Timing) and read from it; internal/app owns the one an operator
// sets (app.Config.Timing), validates it once and hands it to each. Before,
// each setting was declared, defaulted and validated in two packages, and
// the process copied one field into the other.
package timing

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

// Config holds the timings several packages share. Zero values take the
// defaults of DefaultConfig (see WithDefaults); Validate refuses values
// that would turn a protection off.
type Config struct {
	// TraceTTL is how long a trace ID blocks repeats (HOOX_TRACE_TTL): the
	// gateway's claims and the traces the sweeper creates for a dead
	// attempt's order. Default 24h; at least 1 ms, and at least the
	// gateway's DedupWindow.
	TraceTTL time.Duration
	// LockWait is how long a repeat waits for the first attempt
	// (HOOX_LOCK_WAIT), and a release (DELETE /admin/traces/…, the web
	// page's release button) for an attempt still holding the trace, so a
	// release waits as long as a repeat does. Default 2s; between
	// MinLockWait and MaxLockWait. (A reconcile's wait is its own,
	// jobs.Config.LockWait.)
	LockWait time.Duration
	// VenueTimeout bounds one venue call, of a signal or of a reconcile or
	// sweep; past it the answer counts as lost and the trace is reconciled
	// (HOOX_VENUE_TIMEOUT). Default 10s; above zero, or every placement
	// would count as lost.
	VenueTimeout time.Duration
	// MaxSignalAge is the oldest signal a reconcile may still place (past
	// it, a stale market order is never sent) and how far a signed
	// X-Hoox-Timestamp may lie in the past or the future before the request
	// is refused as a replay (HOOX_MAX_SIGNAL_AGE). Default 30s; at least
	// 1s, since the timestamp counts whole seconds. app.Config.Validate
	// also keeps it within half the dedup window, so a replay inside the
	// age is always a duplicate.
	MaxSignalAge time.Duration
	// Now is this replica's clock (nil: time.Now), read by the webhook, the
	// gateway and the jobs alike: a signal's arrival and wait, a signed
	// timestamp's age, a venue error's time. Whether a window that Postgres
	// stamped has passed is judged by Postgres's now() in the query, never
	// by this clock (DESIGN: "One clock per judgement"); tests and the
	// HOOX_DRILL_CLOCK_SKEW drill set it.
	Now func() time.Time
}

// Clock reads Now, or the system clock when it is nil.
func (c Config) Clock() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// DefaultConfig holds the defaults the README's configuration table lists.
func DefaultConfig() Config {
	return Config{TraceTTL: 24 * time.Hour, LockWait: 2 * time.Second, VenueTimeout: 10 * time.Second, MaxSignalAge: 30 * time.Second}
}

// WithDefaults returns c with every zero field set to DefaultConfig's. A
// caller that must refuse an explicit zero (cmd/hoox, mapping an operator's
// HOOX_LOCK_WAIT=0) validates before, not after.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	if c.TraceTTL == 0 {
		c.TraceTTL = d.TraceTTL
	}
	if c.LockWait == 0 {
		c.LockWait = d.LockWait
	}
	if c.VenueTimeout == 0 {
		c.VenueTimeout = d.VenueTimeout
	}
	if c.MaxSignalAge == 0 {
		c.MaxSignalAge = d.MaxSignalAge
	}
	return c
}

// Validate refuses settings that would disable a protection. Its errors are
// *confcheck.Error values naming the field (Config "timing"), all of them
// joined.
func (c Config) Validate() error {
	ck := confcheck.New("timing")
	ck.Duration("LockWait", c.LockWait, MinLockWait, MaxLockWait, lockWaitWhy(c.LockWait))
	ck.Duration("TraceTTL", c.TraceTTL, time.Millisecond, 0,
		"; 0 or less would let every repeat through")
	ck.Duration("VenueTimeout", c.VenueTimeout, time.Millisecond, 0,
		"; 0 or less would count every placement as lost")
	if c.MaxSignalAge < time.Millisecond {
		ck.Duration("MaxSignalAge", c.MaxSignalAge, time.Millisecond, 0,
			"; 0 or less would fail every reconcile instead of placing it")
	} else {
		ck.Duration("MaxSignalAge", c.MaxSignalAge, time.Second, 0,
			": X-Hoox-Timestamp counts whole seconds, and less would refuse every signed signal")
	}
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
