package exchange

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// PaperName is the name of the built-in paper venue. Test signals for a
// venue with no testnet credentials go to it.
const PaperName = "paper"

// Entry is one configured account: its live venue and, when testnet
// credentials are configured, its testnet venue. A venue's default account
// (HOOX_<VENUE>_*) is named as its venue; a named account (HOOX_ACCOUNTS)
// has its own name and says its venue in Venue.
type Entry struct {
	// Name is what a signal's exchange or account field says: paper,
	// binance, … or a named account ("main", "sub1"). It is what the
	// trace, intent and order rows store as their exchange, so every
	// recovery path finds the same account again.
	Name string
	// Venue is the venue kind (binance, bybit-spot, paper, …) of a named
	// account; empty for a venue's default account, whose Name is its
	// venue.
	Venue string
	// Live receives signals without test: true.
	Live Venue
	// Test receives test signals; nil sends them to paper.
	Test Venue
	// Testnet is true when Live itself points at the venue's testnet
	// (HOOX_<VENUE>_TESTNET=true): nothing real trades.
	Testnet bool
	// BaseURL is where Live sends its requests; empty for paper.
	BaseURL string
}

// TestnetSuffix ends the key name (KeyName) of an account's testnet pair:
// "binance:testnet". An account with a testnet pair holds two API keys,
// and what one of them met (a refused key, an outage) says nothing of the
// other. Account names are [a-z0-9_-], so the colon never meets one.
const TestnetSuffix = ":testnet"

// Registry maps an exchange name ("paper", …) to its venues. Which venues
// exist is fixed at start-up; only the last-error notes change.
type Registry struct {
	entries map[string]Entry
	mu      sync.Mutex
	// errs is by key name (KeyName).
	errs map[string]VenueError
	// errCount counts NoteError calls by account, its testnet pair's
	// included (hoox_venue_errors_total).
	errCount map[string]uint64
}

// VenueError is the last error a venue gave, for operators.
type VenueError struct {
	At      time.Time
	Message string
}

// VenueStatus describes one configured venue for the operator's page.
type VenueStatus struct {
	Name string
	// Venue is the account's venue kind (Name for a default account).
	Venue      string
	Testnet    bool
	HasTestnet bool
	BaseURL    string
	LastError  *VenueError
	// TestnetLastError is the last error of the testnet pair (test
	// signals), kept apart from the live key's LastError.
	TestnetLastError *VenueError
}

// NewRegistry returns a registry of venues with only live accounts, as a
// map from name to venue (tests and the paper-only default).
func NewRegistry(venues map[string]Venue) *Registry {
	entries := make([]Entry, 0, len(venues))
	for name, v := range venues {
		entries = append(entries, Entry{Name: name, Live: v})
	}
	return NewRegistryOf(entries...)
}

// NewRegistryOf returns a registry over entries; a later entry with the same
// name replaces an earlier one.
func NewRegistryOf(entries ...Entry) *Registry {
	r := &Registry{entries: map[string]Entry{}, errs: map[string]VenueError{}, errCount: map[string]uint64{}}
	for _, e := range entries {
		r.entries[e.Name] = e
	}
	return r
}

// Get returns the live venue configured under name.
func (r *Registry) Get(name string) (Venue, bool) {
	e, ok := r.entries[name]
	return e.Live, ok
}

// For returns the venue a signal for name goes to: the live account, or for
// a test signal the testnet account, else paper (which keeps test and live
// books apart). ok is false when name is not configured, or a test signal
// has neither a testnet account nor paper to go to.
func (r *Registry) For(name string, test bool) (Venue, bool) {
	e, ok := r.entries[name]
	if !ok {
		return nil, false
	}
	if !test {
		return e.Live, true
	}
	if e.Test != nil {
		return e.Test, true
	}
	if name == PaperName {
		return e.Live, true
	}
	p, ok := r.entries[PaperName]
	return p.Live, ok
}

// VenueOf returns the venue kind of the account named name: Entry.Venue,
// or the name itself for a venue's default account.
func (r *Registry) VenueOf(name string) (string, bool) {
	e, ok := r.entries[name]
	if !ok {
		return "", false
	}
	if e.Venue == "" {
		return e.Name, true
	}
	return e.Venue, true
}

// Names lists the configured exchange names, sorted, for error messages and
// readiness reports.
func (r *Registry) Names() []string {
	return slices.Sorted(maps.Keys(r.entries))
}

// KeyName names the API key a signal for account name reaches the venue
// with (For), which is what its errors are noted and alerted under: name
// for a live signal; for a test signal name+TestnetSuffix when the
// account has a testnet pair, else PaperName (paper takes it). A name not
// configured is itself.
func (r *Registry) KeyName(name string, test bool) string {
	e, ok := r.entries[name]
	switch {
	case !ok || !test || name == PaperName:
		return name
	case e.Test != nil:
		return name + TestnetSuffix
	}
	return PaperName
}

// NoteError remembers err as the last error of key name (an account, or
// its testnet pair: KeyName); the operator's page shows it. A nil err is
// ignored.
func (r *Registry) NoteError(name string, err error, at time.Time) {
	if err == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs[name] = VenueError{At: at, Message: err.Error()}
	// Counted by account, as hoox_venue_errors_total always was.
	r.errCount[strings.TrimSuffix(name, TestnetSuffix)]++
}

// Describe lists every configured venue with its last error, sorted by name.
func (r *Registry) Describe() []VenueStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]VenueStatus, 0, len(r.entries))
	for _, name := range r.Names() {
		e := r.entries[name]
		venue, _ := r.VenueOf(name)
		s := VenueStatus{Name: name, Venue: venue, Testnet: e.Testnet, HasTestnet: e.Test != nil, BaseURL: RedactURL(e.BaseURL)}
		if ve, ok := r.errs[name]; ok {
			s.LastError = &ve
		}
		if ve, ok := r.errs[name+TestnetSuffix]; ok && e.Test != nil {
			s.TestnetLastError = &ve
		}
		out = append(out, s)
	}
	return out
}
