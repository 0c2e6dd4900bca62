package binancefake

import (
	"net/http"
)

// algoTypes are the order types each market counts against its
// MAX_NUM_ALGO_ORDERS filter. USDⓈ-M (common-definition.md,
// "MAX_NUM_ALGO_ORDERS"): "STOP, STOP_MARKET, TAKE_PROFIT,
// TAKE_PROFIT_MARKET, and TRAILING_STOP_MARKET"; the fake holds them all
// as Algo Order API orders. Spot (filters.md): "STOP_LOSS,
// STOP_LOSS_LIMIT, TAKE_PROFIT, and TAKE_PROFIT_LIMIT", alone or as an
// order of an OCO list (whose LIMIT_MAKER leg does not count).
var spotAlgoTypes = map[string]bool{"STOP_LOSS": true, "STOP_LOSS_LIMIT": true, "TAKE_PROFIT": true, "TAKE_PROFIT_LIMIT": true}

// SetMaxNumAlgoOrders sets symbol's MAX_NUM_ALGO_ORDERS filter, on both
// markets: exchangeInfo publishes it and placements beyond it are refused
// (futures -4045 "Reach max stop order limit.", spot -1013 "Filter
// failure: MAX_NUM_ALGO_ORDERS"). Zero removes the cap (and the filter).
func (s *Server) SetMaxNumAlgoOrders(symbol string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sym, ok := s.symbols[symbol]
	if !ok {
		return
	}
	sym.MaxNumAlgoOrders = n
	s.symbols[symbol] = sym
}

// OpenAlgoOrders counts the account's open algo orders on symbol in market
// as the MAX_NUM_ALGO_ORDERS filter counts them.
func (s *Server) OpenAlgoOrders(market, symbol string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.openAlgoCount(market, symbol)
}

// openAlgoCount is OpenAlgoOrders with s.mu held.
func (s *Server) openAlgoCount(market, symbol string) int {
	n := 0
	if market == MarketFutures {
		for _, a := range s.algos {
			if a.Symbol == symbol && a.Status == "NEW" {
				n++
			}
		}
		return n
	}
	for _, o := range s.orders {
		if o.Market == MarketSpot && o.Symbol == symbol && o.Open() && spotAlgoTypes[o.Type] {
			n++
		}
	}
	for _, l := range s.lists {
		if l.Symbol != symbol || l.Status != "EXECUTING" {
			continue
		}
		for _, o := range []ListOrder{l.Above, l.Below} {
			if o.Status == "NEW" && spotAlgoTypes[o.Type] {
				n++
			}
		}
	}
	return n
}

// algoCapRefused answers the refusal and reports true when adding adds
// algo orders on sym in market would exceed its MAX_NUM_ALGO_ORDERS.
// Called with s.mu held, after the request's other checks (a request the
// venue would refuse for another reason is refused for that one).
func (s *Server) algoCapRefused(w http.ResponseWriter, market string, sym Symbol, adds int) bool {
	if sym.MaxNumAlgoOrders <= 0 || s.openAlgoCount(market, sym.Symbol)+adds <= sym.MaxNumAlgoOrders {
		return false
	}
	if market == MarketFutures {
		// error-code.md: "-4045 MAX_STOP_ORDER_EXCEEDED: Reach max stop
		// order limit."
		writeErr(w, http.StatusBadRequest, -4045, "Reach max stop order limit.")
		return true
	}
	// errors.md, -1013 INVALID_MESSAGE with the Filter failures table's
	// "Filter failure: MAX_NUM_ALGO_ORDERS".
	writeErr(w, http.StatusBadRequest, -1013, "Filter failure: MAX_NUM_ALGO_ORDERS")
	return true
}

// handleOpenAlgoOrders is GET /fapi/v1/openAlgoOrders
// (trade/rest-api/Current-All-Algo-Open-Orders.md): the open algo orders
// of one symbol, or of every symbol without one.
func (s *Server) handleOpenAlgoOrders(w http.ResponseWriter, r *http.Request) {
	p, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	symbol := p.Get("symbol")
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.symbols[symbol]; symbol != "" && !ok {
		writeErr(w, http.StatusBadRequest, -1121, "Invalid symbol.")
		return
	}
	out := []map[string]any{}
	for _, a := range s.algos {
		if a.Status == "NEW" && (symbol == "" || a.Symbol == symbol) {
			out = append(out, algoJSON(a))
		}
	}
	writeJSON(w, http.StatusOK, out)
}
