package binancefake

import (
	"net/url"
	"strconv"
	"time"
)

// lateOrder is a placement the API took (FaultLateInEngine) that reaches
// the matching engine at due.
type lateOrder struct {
	market string
	params url.Values
}

// runEngine hands every late order whose time has come to the matching
// engine; callers hold mu. Spot books it whatever its timestamp (the
// recvWindow checks end before the matching engine); futures refuses one
// that reaches the engine after timestamp + recvWindow (-5028), and then
// nothing exists. An order the engine takes is booked as any other, with
// the checks (filters, balance, the client-order-ID rule) of that moment.
func (s *Server) runEngine() {
	s.late.Run(s.now(), func(l lateOrder, due time.Time) bool {
		if l.market == marketAlgo {
			// The Algo Service books it however late (InjectAlgo).
			return s.bookAlgoNow(l.params)
		}
		if l.market == MarketFutures && !withinRecvWindow(l.params, due) {
			return false
		}
		_, _, e := s.place(l.market, l.params)
		return e == nil
	})
}

// withinRecvWindow is the matching engine's check of a placement's
// timestamp at time at: at - timestamp <= recvWindow (5000 ms when the
// request sent none).
func withinRecvWindow(params url.Values, at time.Time) bool {
	ts, _ := strconv.ParseInt(params.Get("timestamp"), 10, 64)
	recvWindow := int64(5000)
	if rw, err := strconv.ParseInt(params.Get("recvWindow"), 10, 64); err == nil {
		recvWindow = rw
	}
	return at.UnixMilli()-ts <= recvWindow
}

// PendingInEngine counts FaultLateInEngine placements the matching engine
// has not reached yet on the fake's clock.
func (s *Server) PendingInEngine() int { return s.afterEngine(s.late.Pending) }

// LateRefused counts FaultLateInEngine placements the matching engine
// refused when they reached it (futures past timestamp + recvWindow, or
// any order the book's rules refused by then): nothing was booked for
// them.
func (s *Server) LateRefused() int { return s.afterEngine(s.late.Refused) }

// HoldMarketOrders makes the next n market orders rest unexecuted (status
// NEW, nothing filled) instead of filling at once, as a market order that
// the matching engine has not finished does: Binance may answer a MARKET
// order NEW or PARTIALLY_FILLED. Each such order fills, at the symbol's
// price, on the queries-th order query that finds it; with queries 0 it
// stays NEW until FillOrder. It counts queries, not time, so a test needs
// no clock for it.
func (s *Server) HoldMarketOrders(n, queries int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holdLeft, s.holdQueries = n, queries
}

// queried notes one order query that found o, filling a held market
// order when its count is reached; callers hold mu.
func (s *Server) queried(o *Order) {
	if o.fillOnQuery <= 0 || !o.Open() {
		return
	}
	o.fillOnQuery--
	if o.fillOnQuery > 0 {
		return
	}
	s.execute(o, o.Quantity.Sub(o.ExecutedQty), s.symbols[o.Symbol].Price)
	o.Status = "FILLED"
}

// afterEngine is count once every late placement due by now has reached
// the engine.
func (s *Server) afterEngine(count func() int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runEngine()
	return count()
}
