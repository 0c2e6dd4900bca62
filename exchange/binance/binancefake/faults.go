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
	// FaultBareStatusAfterAccept stores the order, then answers
	// Fault.HTTPStatus (408 when zero) with a plain-text body and no
	// Binance error code, as a proxy or gateway in front of the matching
	// engine does when it gives up waiting (USDⓈ-M general-info, "HTTP
	// Return Codes": "HTTP 408 return code is used when a timeout has
	// occurred while waiting for a response from the backend server").
	FaultBareStatusAfterAccept
	// FaultCodeAfterAccept stores the order, then answers Fault.HTTPStatus
	// (400 when zero) with Binance's JSON error body carrying Fault.Code
	// and Fault.Msg: an error code a client may not know, although the
	// order exists.
	FaultCodeAfterAccept
	// FaultLateInEngine passes the API's timestamp checks, answers -1007
	// (HTTP 503, "execution status unknown") at once, and hands the order
	// to the matching engine Fault.Delay later on the fake's clock
	// (Advance, or the Options.Now clock moving). What happens then is
	// each market's documented rule: spot books the order however late it
	// is (CHANGELOG.md 2025-08-12: the recvWindow check before the
	// matching engine "does not cover potential delays inside the Matching
	// Engine itself"), so it can appear after its recvWindow has ended;
	// USDⓈ-M futures refuses it unexecuted when timestamp + recvWindow has
	// passed by then (change log 2023-04-17, -5028 "Timestamp for this
	// request is outside of the ME recvWindow"). The engine's decision is
	// taken the first time anything looks at the fake after Delay.
	FaultLateInEngine
	// FaultRefuse answers Fault.HTTPStatus (400 when zero) with Binance's
	// JSON error body carrying Fault.Code and Fault.Msg before accepting
	// anything: a refusal for good, such as -2010 "Account has
	// insufficient balance for requested action.".
	FaultRefuse
)

// Fault is a fault for the next Count placements (1 when Count is zero).
type Fault struct {
	Kind  FaultKind
	Count int
	// RetryAfter is the Retry-After for FaultRateLimit and FaultBan; one
	// second when zero (the header carries whole seconds).
	RetryAfter time.Duration
	// HTTPStatus is the answer's status for FaultBareStatusAfterAccept
	// (408 when zero) and FaultCodeAfterAccept (400 when zero).
	HTTPStatus int
	// Code and Msg are the error body of FaultCodeAfterAccept.
	Code int
	Msg  string
	// Delay is how long after the API took it a FaultLateInEngine order
	// reaches the matching engine, on the fake's clock.
	Delay time.Duration
	// BanMessage makes FaultBan answer as the USDⓈ-M docs describe a ban:
	// code -1003 "Way too many requests; IP banned until %s." with the
	// ban's end (now + RetryAfter, in milliseconds on the fake's clock)
	// and no Retry-After header, which general-info.md ("LIMITS") does not
	// promise.
	BanMessage bool
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
func (s *Server) takeFault() (Fault, bool) { return popFault(&s.faults) }

// popFault takes one use of the first fault of q with uses left,
// dropping it once they are spent, or returns ok false.
func popFault(q *[]Fault) (Fault, bool) {
	for len(*q) > 0 {
		f := &(*q)[0]
		if f.Count <= 0 {
			*q = (*q)[1:]
			continue
		}
		f.Count--
		out := *f
		if f.Count == 0 {
			*q = (*q)[1:]
		}
		return out, true
	}
	return Fault{}, false
}
