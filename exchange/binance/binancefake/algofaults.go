package binancefake

import (
	"net/http"
	"net/http/httptest"
	"net/url"
)

// marketAlgo marks a late placement (lateOrder.market) that went to the
// USDⓈ-M Algo Order API, not to the matching engine.
const marketAlgo = "futures-algo"

// InjectAlgo queues f for the next POST /fapi/v1/algoOrder placements,
// apart from Inject's queue (which the plain order endpoints take), so a
// test can lose an exit's answer without touching its entry. The kinds the
// Algo Order API takes:
//
//   - FaultUnknownAfterAccept: the algo order is booked, and the answer is
//     HTTP 503 -1007 ("execution status unknown").
//   - FaultLateInEngine: the answer is HTTP 503 -1007 at once, and the
//     Algo Service books the order Fault.Delay later on the fake's clock,
//     however late that is. The matching engine's recvWindow check (-5028)
//     covers only the endpoints the derivatives change log lists for it
//     (2023-04-17, USDⓈ-M: POST/PUT /fapi/v1/order, POST/PUT
//     /fapi/v1/batchOrders); POST /fapi/v1/algoOrder is not among them,
//     and an algo order does not reach the matching engine until it is
//     triggered (change log 2025-11-06: conditional orders "migrate … to
//     the Algo Service"). Nothing in the docs refuses a late algo order.
//
// Other kinds are answered as FaultUnknownAfterAccept.
func (s *Server) InjectAlgo(f Fault) {
	if f.Count <= 0 {
		f.Count = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.algoFaults = append(s.algoFaults, f)
}

// takeAlgoFault pops the next algo placement fault; callers hold mu.
func (s *Server) takeAlgoFault() (Fault, bool) { return popFault(&s.algoFaults) }

// newAlgoFaulted answers an algo placement that takes fault f. Called
// with s.mu held.
func (s *Server) newAlgoFaulted(w http.ResponseWriter, p url.Values, f Fault) {
	if f.Kind == FaultLateInEngine {
		s.late.Add(lateOrder{market: marketAlgo, params: p}, s.now().Add(f.Delay))
		writeErr(w, http.StatusServiceUnavailable, -1007, "Timeout waiting for response from backend server. Send status unknown; execution status unknown.")
		return
	}
	if !s.bookAlgoNow(p) {
		// Refused: the answer a client gets is the refusal's.
		s.newAlgo(w, p)
		return
	}
	writeErr(w, http.StatusServiceUnavailable, -1007, "Timeout waiting for response from backend server. Send status unknown; execution status unknown.")
}

// bookAlgoNow runs the algo placement p without a client to answer, and
// reports whether it was booked. Called with s.mu held.
func (s *Server) bookAlgoNow(p url.Values) bool {
	rec := httptest.NewRecorder()
	s.newAlgo(rec, p)
	return rec.Code == http.StatusOK
}
