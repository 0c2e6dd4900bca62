package okxfake

import (
	"net/http"
	"time"
)

// OrderRateWindow is the window of OKX's place-order rate limit ("Rate
// Limit: 60 requests per 2 seconds", OKX/Order_Book_Trading/Trade/
// Post_Place_Order.md).
const OrderRateWindow = 2 * time.Second

// SetOrderRateLimit makes the fake enforce a place-order rate limit of n
// requests per OrderRateWindow (on its clock) for each instrument, as OKX
// counts it ("Rate limit rule: User ID + Instrument ID",
// Post_Place_Order.md; "Rate limits are defined on the Instrument ID
// level" and "Rate limits for placing orders, amending orders, and
// cancelling orders are independent from each other",
// Introduction/Rate_Limits/Trading_Related_Apis.md). A placement over it
// is answered 50011 (HTTP 429, Error_Code/Rest_API/Public.md) and books
// nothing; order queries, cancels and other instruments' placements are
// not counted against it. 0 (the default) limits nothing.
func (s *Server) SetOrderRateLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.orderRate = n
}

// Placements is how many place-order requests (POST
// /api/v5/trade/order) reached the fake, answered or not.
func (s *Server) Placements() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.placements
}

// overOrderRate counts a placement on instID at now and reports whether
// it is over the instrument's rate limit; callers hold mu.
func (s *Server) overOrderRate(instID string, now time.Time) bool {
	if s.orderRate <= 0 {
		return false
	}
	if s.orderTimes == nil {
		s.orderTimes = map[string][]time.Time{}
	}
	kept := s.orderTimes[instID][:0]
	for _, at := range s.orderTimes[instID] {
		if now.Sub(at) < OrderRateWindow {
			kept = append(kept, at)
		}
	}
	if len(kept) >= s.orderRate {
		s.orderTimes[instID] = kept
		return true
	}
	s.orderTimes[instID] = append(kept, now)
	return false
}

// rateLimited is OKX's answer to a request over its rate limit.
func rateLimited() reply {
	return fail(http.StatusTooManyRequests, 50011, "Rate limit reached. Please refer to API documentation and throttle requests accordingly.")
}
