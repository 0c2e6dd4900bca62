package bybitfake

import "fmt"

// SetMaxPartialTPSL caps the take-profits and stop-losses in Partial
// tpslMode that the account may hold on one linear symbol (error.mdx:
// "110061 Not allowed to have more than 20 TP/SLs under Partial
// tpSlMode"; 20 on Bybit). Each take-profit and each stop-loss of an
// order that is not cancelled or rejected counts once; an order whose
// exits would exceed the cap is refused 110061 before it is booked, so
// no position opens without them. Zero (the default) caps nothing.
func (s *Server) SetMaxPartialTPSL(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maxPartialTPSL = n
}

// partialTPSLRefused returns the 110061 refusal when an order on symbol
// with the given take-profit and stop-loss (Partial mode) would exceed
// the cap; s.mu is held.
func (s *Server) partialTPSLRefused(symbol string, hasTP, hasSL bool) (reply, bool) {
	adds := 0
	for _, has := range []bool{hasTP, hasSL} {
		if has {
			adds++
		}
	}
	if s.maxPartialTPSL <= 0 || adds == 0 {
		return reply{}, false
	}
	held := 0
	for _, o := range s.orders {
		if o.Category != CategoryLinear || o.Symbol != symbol || o.TpslMode != "Partial" {
			continue
		}
		switch o.Status {
		case "Cancelled", "Rejected", "Deactivated", "PartiallyFilledCanceled":
			continue
		}
		if !o.TakeProfit.IsZero() {
			held++
		}
		if !o.StopLoss.IsZero() {
			held++
		}
	}
	if held+adds <= s.maxPartialTPSL {
		return reply{}, false
	}
	return fail(110061, fmt.Sprintf("Not allowed to have more than %d TP/SLs under Partial tpSlMode", s.maxPartialTPSL)), true
}
