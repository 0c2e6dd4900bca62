package exchange

import (
	"maps"
	"slices"
)

// Registry maps an exchange name ("paper", …) to its Venue. It is built once
// at start-up and never changed, so it needs no lock.
type Registry struct {
	venues map[string]Venue
}

// NewRegistry returns a registry over a copy of venues, so that a caller
// mutating its map later cannot change which venues a running gateway uses.
func NewRegistry(venues map[string]Venue) *Registry {
	return &Registry{venues: maps.Clone(venues)}
}

// Get returns the venue configured under name.
func (r *Registry) Get(name string) (Venue, bool) {
	v, ok := r.venues[name]
	return v, ok
}

// Names lists the configured exchange names, sorted, for error messages and
// readiness reports.
func (r *Registry) Names() []string {
	return slices.Sorted(maps.Keys(r.venues))
}
