package binancefake

import "time"

// FaultKind is one way a real Binance fails an order placement.
type FaultKind int

// The faults the fake can inject into order placements (POST /api/v3/order
// and POST /fapi/v1/order).
const (
	// FaultServerErrorAfterAccept stores the order, then answers HTTP 502
	// with an HTML body, as a proxy in front of Binance does: the order
	// exists, the client cannot know.
	FaultServerErrorAfterAccept FaultKind = iota + 1
	// FaultUnknownAfterAccept stores the order, then answers HTTP 503 with
	// code -1007 ("Send status unknown; execution status unknown").
	FaultUnknownAfterAccept
	// FaultDropAfterAccept stores the order, then closes the connection
	// without answering.
	FaultDropAfterAccept
	// FaultHangAfterAccept stores the order, then answers nothing until the
	// client gives up (its request context ends), as a venue whose answer
	// times out.
	FaultHangAfterAccept
	// FaultRateLimit answers 429 with Retry-After and code -1003 before
	// accepting anything.
	FaultRateLimit
	// FaultBan answers 418 with Retry-After before accepting anything.
	FaultBan
	// FaultCredentials answers 401 with code -2015 ("Invalid API-key, IP,
	// or permissions for action.") before accepting anything.
	FaultCredentials
)

// Fault is a fault for the next Count placements (1 when Count is zero).
type Fault struct {
	Kind  FaultKind
	Count int
	// RetryAfter is the Retry-After for FaultRateLimit and FaultBan; one
	// second when zero (the header carries whole seconds).
	RetryAfter time.Duration
}

// Inject queues f behind any faults already queued: each placement takes
// the first queued fault with a count left.
func (s *Server) Inject(f Fault) {
	if f.Count <= 0 {
		f.Count = 1
	}
	if f.RetryAfter <= 0 {
		f.RetryAfter = time.Second
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, f)
}

// takeFault pops the next fault, or returns ok false; callers hold mu.
func (s *Server) takeFault() (Fault, bool) {
	for len(s.faults) > 0 {
		f := &s.faults[0]
		if f.Count <= 0 {
			s.faults = s.faults[1:]
			continue
		}
		f.Count--
		out := *f
		if f.Count == 0 {
			s.faults = s.faults[1:]
		}
		return out, true
	}
	return Fault{}, false
}
