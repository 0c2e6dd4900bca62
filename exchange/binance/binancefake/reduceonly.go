package binancefake

import (
	"net/http"
	"sync"

	"github.com/shopspring/decimal"
)

// restingReduceOnly is what the open reduce-only orders on symbol's side
// still have to execute; callers hold mu. A new reduce-only order that
// would take the reduce-only total past the position is refused with -2022
// "ReduceOnly Order is rejected." (error-code.md, -2022 REDUCE_ONLY_REJECT):
// resting take-profit limits for the whole position block a market close
// until they are cancelled.
func (s *Server) restingReduceOnly(market, symbol, side string) decimal.Decimal {
	total := decimal.Zero
	for _, o := range s.orders {
		if o.Market == market && o.Symbol == symbol && o.ReduceOnly && o.Side == side && o.Open() {
			total = total.Add(o.Quantity.Sub(o.ExecutedQty))
		}
	}
	return total
}

// handleOpenOrders is GET /fapi/v1/openOrders (trade/rest-api/
// Current-All-Open-Orders.md): the symbol's open orders, in the order
// query's shape.
func (s *Server) handleOpenOrders(market string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		params, ok := s.authenticate(w, r)
		if !ok {
			return
		}
		symbol := params.Get("symbol")
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := s.symbols[symbol]; symbol != "" && !ok {
			writeErr(w, http.StatusBadRequest, -1121, "Invalid symbol.")
			return
		}
		out := []map[string]any{}
		for _, o := range s.orders {
			if o.Market == market && (symbol == "" || o.Symbol == symbol) && o.Open() {
				out = append(out, orderJSON(o, false))
			}
		}
		if market == MarketSpot {
			// Spot lists each resting order of an OCO list too, with its
			// orderListId (rest-api.md, "Current open orders").
			for _, l := range s.lists {
				if l.Status != "EXECUTING" || (symbol != "" && l.Symbol != symbol) {
					continue
				}
				for _, o := range []ListOrder{l.Below, l.Above} {
					if o.Status == "NEW" {
						out = append(out, listOrderJSON(l, o))
					}
				}
			}
		}
		writeJSON(w, http.StatusOK, out)
	}
}

// Cancels counts the orders the fake cancelled through DELETE.
func (s *Server) Cancels() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancels
}

type heldPlacement struct {
	held    chan struct{}
	release chan struct{}
}

// HoldPlacementAfterCancel makes the first order placement that arrives
// after a cancel wait, unbooked, until release is called or its client
// gives up (it then books nothing); held is closed once it waits. Crash
// tests kill hoox between a close's cancels and the close this way.
func (s *Server) HoldPlacementAfterCancel() (held <-chan struct{}, release func()) {
	h := &heldPlacement{held: make(chan struct{}), release: make(chan struct{})}
	s.mu.Lock()
	s.holdAfterCancel = h
	s.mu.Unlock()
	var once sync.Once
	return h.held, func() { once.Do(func() { close(h.release) }) }
}

// waitHeldPlacement holds r if it is the placement HoldPlacementAfterCancel
// asked for; false when its client went away meanwhile.
func (s *Server) waitHeldPlacement(r *http.Request) bool {
	s.mu.Lock()
	h := s.holdAfterCancel
	if h == nil || s.cancels == 0 {
		s.mu.Unlock()
		return true
	}
	s.holdAfterCancel = nil
	s.mu.Unlock()
	close(h.held)
	select {
	case <-h.release:
		return true
	case <-r.Context().Done():
		return false
	}
}
