package binancefake

import (
	"net/http"
	"strconv"

	"github.com/shopspring/decimal"
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

// AccountAlgoOrderLimit is how many conditional (algo) orders a USDⓈ-M
// account may hold open across all symbols: "The parameter "filterType":
// "MAX_NUM_ALGO_ORDERS" has been removed from the endpoint GET
// /fapi/v1/exchangeInfo. The condtional order limits is 200 across all
// symbols." (derivatives change-log.md, 2025-12-29). The fake refuses the
// algo order past it with the code the per-symbol cap had, -4045 "Reach
// max stop order limit." (error-code.md, MAX_STOP_ORDER_EXCEEDED): the
// docs name no other.
const AccountAlgoOrderLimit = 200

// SetAccountAlgoCap sets the account's USDⓈ-M limit on open algo orders
// across all symbols (AccountAlgoOrderLimit by default); zero removes it.
// A symbol's MAX_NUM_ALGO_ORDERS (SetMaxNumAlgoOrders), which Binance no
// longer publishes, is checked as well when set.
func (s *Server) SetAccountAlgoCap(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accountAlgoCap = n
}

// FillAccountAlgoCap places stop orders hoox did not place on symbol (as a
// trader's manual stops would) until the account holds as many open algo
// orders as its limit across all symbols allows (SetAccountAlgoCap).
func (s *Server) FillAccountAlgoCap(symbol string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sym, ok := s.symbols[symbol]
	if !ok {
		return
	}
	for {
		open := 0
		for _, a := range s.algos {
			if a.Status == "NEW" {
				open++
			}
		}
		if open >= s.accountAlgoCap {
			return
		}
		s.nextID++
		s.algos = append(s.algos, &AlgoOrder{AlgoID: s.nextID, ClientAlgoID: "manual" + strconv.FormatInt(s.nextID, 10),
			Symbol: sym.Symbol, Side: "SELL", Type: "STOP_MARKET", Quantity: sym.MinQty, TriggerPrice: sym.Price.Div(decimal.NewFromInt(2)).Round(0),
			ReduceOnly: true, Status: "NEW", Time: s.now()})
	}
}

// accountAlgoCapRefused answers -4045 and reports true when one more algo
// order would pass the account's limit across all symbols. Called with
// s.mu held.
func (s *Server) accountAlgoCapRefused(w http.ResponseWriter) bool {
	open := 0
	for _, a := range s.algos {
		if a.Status == "NEW" {
			open++
		}
	}
	if s.accountAlgoCap <= 0 || open+1 <= s.accountAlgoCap {
		return false
	}
	writeErr(w, http.StatusBadRequest, -4045, "Reach max stop order limit.")
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

// FillAlgoCapOnNextOrder makes the next plain USDⓈ-M order placement (POST
// /fapi/v1/order) first fill symbol's MAX_NUM_ALGO_ORDERS with stop orders
// hoox did not place (as a trader's manual stops, or another signal's
// exits, would): an entry whose exits were counted against the cap before
// it was sent then finds the cap full when they go out — the race the
// count read before the intent cannot close.
func (s *Server) FillAlgoCapOnNextOrder(symbol string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fillAlgoCap = symbol
}

// FillAlgoCap fills symbol's USDⓈ-M MAX_NUM_ALGO_ORDERS now with stop
// orders hoox did not place (see FillAlgoCapOnNextOrder).
func (s *Server) FillAlgoCap(symbol string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fillAlgoCap = symbol
	s.fillAlgoCapNow()
}

// fillAlgoCapNow places the stop orders FillAlgoCapOnNextOrder asked for.
// Called with s.mu held.
func (s *Server) fillAlgoCapNow() {
	sym, ok := s.symbols[s.fillAlgoCap]
	s.fillAlgoCap = ""
	if !ok {
		return
	}
	for s.openAlgoCount(MarketFutures, sym.Symbol) < sym.MaxNumAlgoOrders {
		s.nextID++
		s.algos = append(s.algos, &AlgoOrder{AlgoID: s.nextID, ClientAlgoID: "manual" + strconv.FormatInt(s.nextID, 10),
			Symbol: sym.Symbol, Side: "SELL", Type: "STOP_MARKET", Quantity: sym.MinQty, TriggerPrice: sym.Price.Div(decimal.NewFromInt(2)).Round(0),
			ReduceOnly: true, Status: "NEW", Time: s.now()})
	}
}

// SetMaxNumOrders sets symbol's spot MAX_NUM_ORDERS filter (filters.md:
// "the maximum number of orders an account is allowed to have open on a
// symbol … both "algo" orders and normal orders are counted"): spot
// exchangeInfo publishes it, and a spot order or order list that would
// pass it is refused -1013 "Filter failure: MAX_NUM_ORDERS" (errors.md).
// Zero removes it. The fake applies it to spot only.
func (s *Server) SetMaxNumOrders(symbol string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sym, ok := s.symbols[symbol]
	if !ok {
		return
	}
	sym.MaxNumOrders = n
	s.symbols[symbol] = sym
}

// spotOrdersRefused reports whether adds more spot orders on sym would
// pass its MAX_NUM_ORDERS; the caller answers the refusal. Called with
// s.mu held.
func (s *Server) spotOrdersRefused(sym Symbol, adds int) bool {
	if sym.MaxNumOrders <= 0 {
		return false
	}
	n := 0
	for _, o := range s.orders {
		if o.Market == MarketSpot && o.Symbol == sym.Symbol && o.Open() {
			n++
		}
	}
	for _, l := range s.lists {
		if l.Symbol != sym.Symbol || l.Status != "EXECUTING" {
			continue
		}
		for _, o := range []ListOrder{l.Above, l.Below} {
			if o.Status == "NEW" {
				n++
			}
		}
	}
	return n+adds > sym.MaxNumOrders
}
