package gateway

import (
	"time"

	"github.com/hoox/hoox/internal/confcheck"
	"github.com/hoox/hoox/internal/timing"
)

// Config holds the gateway's timing rules: its own and the shared ones
// (Timing). Zero values take the defaults of DefaultConfig (see
// WithDefaults); Validate refuses values that would turn a protection off.
type Config struct {
	// DedupWindow is the sliding window for signals with neither a client
	// key nor a timestamp (HOOX_DEDUP_WINDOW). Default 60s; at least 1 ms
	// (it is stored in milliseconds) and at most Timing.TraceTTL.
	DedupWindow time.Duration
	// Timing holds the settings the gateway shares with other packages: the
	// trace TTL, how long a repeat waits for the first attempt (LockWait)
	// and the bound of one venue call (VenueTimeout). They are declared,
	// defaulted and validated once, in package timing; internal/app passes
	// the operator's (app.Config.Timing). Validate does not check them.
	Timing timing.Config
}

// DefaultConfig holds the defaults the README's configuration table lists.
func DefaultConfig() Config {
	return Config{DedupWindow: 60 * time.Second, Timing: timing.DefaultConfig()}
}

// WithDefaults returns c with every zero field set to DefaultConfig's. A
// caller that must refuse an explicit zero (cmd/hoox, mapping an operator's
// HOOX_LOCK_WAIT=0) validates before, not after.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	if c.DedupWindow == 0 {
		c.DedupWindow = d.DedupWindow
	}
	c.Timing = c.Timing.WithDefaults()
	return c
}

// Validate refuses settings that would disable a protection. Its errors are
// *confcheck.Error values naming the field (Config "gateway"), all of them
// joined. The shared Timing is its owner's to validate
// (timing.Config.Validate); only its relation to the window is checked
// here.
func (c Config) Validate() error {
	ck := confcheck.New("gateway")
	ck.Duration("DedupWindow", c.DedupWindow, time.Millisecond, 0,
		"; 0 or less would never hold a signal without a key or timestamp back")
	if ttl := c.Timing.TraceTTL; c.DedupWindow > 0 && ttl > 0 && c.DedupWindow > ttl {
		ck.Refuse("DedupWindow", c.DedupWindow.String(),
			"must not exceed the trace TTL ("+ttl.String()+"): a window trace expires with the TTL, so a longer window is a promise the purge breaks")
	}
	return ck.Err()
}
