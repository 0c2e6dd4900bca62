package exchange

// ErrorCounts returns how many errors each configured venue has given this
// process (every NoteError), zero for a venue that gave none, so a metric
// over it exists for every venue from the start.
func (r *Registry) ErrorCounts() map[string]uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]uint64, len(r.entries))
	for name := range r.entries {
		out[name] = r.errCount[name]
	}
	return out
}
