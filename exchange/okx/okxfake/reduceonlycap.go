package okxfake

import "fmt"

// SetMaxReduceOnly caps the live reduce-only algo orders (trailing stops)
// the account may hold on one instrument. OKX's error page names the cap
// without its number (OKX/Error_Code/Rest_API/Public.md: "51165 The
// number of {instrument} reduce-only orders reached the upper limit of
// {upLimit}. Cancel some orders to proceed."); one more is refused 51165
// and not booked. Zero (the default) caps nothing.
func (s *Server) SetMaxReduceOnly(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maxReduceOnly = n
}

// reduceOnlyRefused returns the 51165 refusal for algo order id when a
// reduce-only one more on instID would pass the cap; callers hold mu.
func (s *Server) reduceOnlyRefused(id, instID string) (reply, bool) {
	if s.maxReduceOnly <= 0 {
		return reply{}, false
	}
	live := 0
	for _, a := range s.algos {
		if a.InstID == instID && a.ReduceOnly && a.State == "live" {
			live++
		}
	}
	if live < s.maxReduceOnly {
		return reply{}, false
	}
	return algoFail(id, 51165, fmt.Sprintf("The number of %s reduce-only orders reached the upper limit of %d. Cancel some orders to proceed.", instID, s.maxReduceOnly)), true
}
