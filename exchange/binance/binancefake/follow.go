package binancefake

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/shopspring/decimal"
)

// Commission rates the fake charges on every execution. Binance spot
// charges the asset received (the base asset on a buy, the quote asset on
// a sell) unless BNB pays it (faqs/commission_faq.md); USDⓈ-M futures
// charge the margin asset, USDT here ("commissionAsset" in the Account
// Trade List, trade/rest-api/Account-Trade-List.md).
var (
	SpotCommissionRate    = decimal.RequireFromString("0.001")
	FuturesCommissionRate = decimal.RequireFromString("0.0004")
)

// Trade is one execution of an order, as the account trade lists show it.
type Trade struct {
	ID              int64
	OrderID         int64
	Symbol          string
	Price           decimal.Decimal
	Qty             decimal.Decimal
	QuoteQty        decimal.Decimal
	Commission      decimal.Decimal
	CommissionAsset string
	Buyer           bool
	Time            int64
}

// trade records an execution of qty at price on o and returns it; callers
// hold mu.
func (s *Server) trade(o *Order, qty, price decimal.Decimal) {
	sym := s.symbols[o.Symbol]
	quote := qty.Mul(price)
	t := Trade{ID: int64(len(s.trades)) + 1, OrderID: o.OrderID, Symbol: o.Symbol, Price: price, Qty: qty, QuoteQty: quote,
		Buyer: o.Side == "BUY", Time: s.now().UnixMilli()}
	switch {
	case o.Market == MarketFutures:
		t.Commission, t.CommissionAsset = quote.Mul(FuturesCommissionRate), sym.Quote
	case o.Side == "BUY":
		t.Commission, t.CommissionAsset = qty.Mul(s.spotRate()).Truncate(8), sym.Base
	default:
		t.Commission, t.CommissionAsset = quote.Mul(s.spotRate()).Truncate(8), sym.Quote
	}
	s.trades = append(s.trades, t)
}

// spotRate is the spot commission rate (SetSpotCommission); callers hold
// mu.
func (s *Server) spotRate() decimal.Decimal {
	if s.spotCommission != nil {
		return *s.spotCommission
	}
	return SpotCommissionRate
}

// tradesOf lists o's trades; callers hold mu.
func (s *Server) tradesOf(o *Order) []Trade {
	var out []Trade
	for _, t := range s.trades {
		if t.OrderID == o.OrderID {
			out = append(out, t)
		}
	}
	return out
}

// Trades lists every execution of the order under clientOrderID.
func (s *Server) Trades(clientOrderID string) []Trade {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.latest(clientOrderID)
	if o == nil {
		return nil
	}
	return s.tradesOf(o)
}

// AllTrades lists every execution the fake made, spot and USDⓈ-M, in the
// order it made them (Trade.ID).
func (s *Server) AllTrades() []Trade {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.trades)
}

// ExpireOrder ends the latest open order under clientOrderID EXPIRED, as
// Binance does with an order its time in force or self-trade prevention
// ends (enums.md, Order status).
func (s *Server) ExpireOrder(clientOrderID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.latest(clientOrderID)
	if o == nil || !o.Open() {
		return ErrNoOrder
	}
	o.Status = "EXPIRED"
	return nil
}

// The account trade lists' documented limits: a page of 500 trades
// unless limit asks for up to 1000 (rest-api.md "Account trade list",
// Account-Trade-List.md); a USDⓈ-M query reads at most 7 days (the last 7
// when neither startTime nor endTime is sent) and nothing older than 6
// months, a spot one at most 24 hours between startTime and endTime.
const (
	tradesDefaultLimit = 500
	tradesMaxLimit     = 1000
	futuresTradeWindow = 7 * 24 * time.Hour
	futuresTradeMaxAge = 180 * 24 * time.Hour
	spotTradeWindow    = 24 * time.Hour
)

// handleMyTrades is the account trade list: GET /api/v3/myTrades (spot,
// rest-api.md "Account trade list") and GET /fapi/v1/userTrades (USDⓈ-M,
// trade/rest-api/Account-Trade-List.md). symbol is mandatory; orderId only
// with it. A page holds limit trades (500 by default, 1000 at most): from
// fromId on when it is sent, else the most recent. USDⓈ-M reads the last 7
// days when neither startTime nor endTime is sent, refuses a longer span
// and fromId beside either, and keeps 6 months; spot takes only the
// parameter combinations it lists, and a span of 24 hours at most.
func (s *Server) handleMyTrades(market string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		params, ok := s.authenticate(w, r)
		if !ok {
			return
		}
		symbol := params.Get("symbol")
		if symbol == "" {
			writeErr(w, http.StatusBadRequest, -1102, "Mandatory parameter 'symbol' was not sent, was empty/null, or malformed.")
			return
		}
		q, ok := s.tradeQuery(w, market, params)
		if !ok {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := s.symbols[symbol]; !ok {
			writeErr(w, http.StatusBadRequest, -1121, "Invalid symbol.")
			return
		}
		if market == MarketFutures && !q.hasStart && !q.hasEnd {
			q.start, q.end = s.now().Add(-futuresTradeWindow).UnixMilli(), s.now().UnixMilli()
			q.hasStart, q.hasEnd = true, true
		}
		type sided struct {
			Trade
			side string
		}
		var found []sided
		orders := s.orders
		if market == MarketSpot {
			// An OCO list's executed order trades like any other.
			orders = append(slices.Clone(orders), s.listBookOrders(symbol)...)
		}
		oldest := s.now().Add(-futuresTradeMaxAge).UnixMilli()
		for _, o := range orders {
			if o.Market != market || o.Symbol != symbol {
				continue
			}
			if id := params.Get("orderId"); id != "" && id != strconv.FormatInt(o.OrderID, 10) {
				continue
			}
			for _, t := range s.tradesOf(o) {
				switch {
				case market == MarketFutures && t.Time < oldest,
					q.hasStart && t.Time < q.start, q.hasEnd && t.Time > q.end,
					q.hasFrom && t.ID < q.from:
					continue
				}
				found = append(found, sided{t, o.Side})
			}
		}
		slices.SortFunc(found, func(a, b sided) int { return cmp.Compare(a.ID, b.ID) })
		if len(found) > q.limit {
			if q.hasFrom {
				found = found[:q.limit]
			} else {
				found = found[len(found)-q.limit:]
			}
		}
		out := []map[string]any{}
		for _, t := range found {
			m := map[string]any{"symbol": t.Symbol, "id": t.ID, "orderId": t.OrderID, "price": t.Price.String(),
				"qty": t.Qty.String(), "quoteQty": t.QuoteQty.String(), "commission": t.Commission.String(),
				"commissionAsset": t.CommissionAsset, "time": t.Time}
			if market == MarketFutures {
				m["buyer"], m["maker"], m["side"], m["positionSide"], m["realizedPnl"] = t.Buyer, true, t.side, "BOTH", "0"
			} else {
				m["orderListId"], m["isBuyer"], m["isMaker"], m["isBestMatch"] = -1, t.Buyer, true, true
			}
			out = append(out, m)
		}
		writeJSON(w, http.StatusOK, out)
	}
}

// tradeQuery is a trade list's optional parameters, read and checked.
type tradeQuery struct {
	start, end, from          int64
	hasStart, hasEnd, hasFrom bool
	limit                     int
}

// tradeQuery reads and checks the trade list's optional parameters as the
// market documents them, writing the refusal when it refuses.
func (s *Server) tradeQuery(w http.ResponseWriter, market string, params url.Values) (tradeQuery, bool) {
	q := tradeQuery{limit: tradesDefaultLimit}
	for _, f := range []struct {
		name string
		to   *int64
		has  *bool
	}{{"startTime", &q.start, &q.hasStart}, {"endTime", &q.end, &q.hasEnd}, {"fromId", &q.from, &q.hasFrom}} {
		v := params.Get(f.name)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeErr(w, http.StatusBadRequest, -1130, fmt.Sprintf("Data sent for parameter '%s' is not valid.", f.name))
			return q, false
		}
		*f.to, *f.has = n, true
	}
	if v := params.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > tradesMaxLimit {
			writeErr(w, http.StatusBadRequest, -1130, "Data sent for parameter 'limit' is not valid.")
			return q, false
		}
		q.limit = n
	}
	if q.hasStart && q.hasEnd && q.start > q.end {
		writeErr(w, http.StatusBadRequest, -1023, "Start time is greater than end time.")
		return q, false
	}
	window := spotTradeWindow
	if market == MarketFutures {
		window = futuresTradeWindow
		// "The parameter fromId cannot be sent with startTime or endTime."
		if q.hasFrom && (q.hasStart || q.hasEnd) {
			writeErr(w, http.StatusBadRequest, -1128, "Combination of optional parameters invalid.")
			return q, false
		}
		// One bound alone reads the 7 days beside it.
		switch {
		case q.hasStart && !q.hasEnd:
			q.end, q.hasEnd = q.start+window.Milliseconds(), true
		case q.hasEnd && !q.hasStart:
			q.start, q.hasStart = q.end-window.Milliseconds(), true
		}
	} else {
		// "These are the supported combinations of all parameters":
		// symbol with nothing else, orderId, startTime, endTime, fromId,
		// startTime and endTime, or orderId and fromId.
		orderID := params.Get("orderId") != ""
		ok := !q.hasFrom || !(q.hasStart || q.hasEnd)
		ok = ok && (!orderID || !(q.hasStart || q.hasEnd))
		if !ok {
			writeErr(w, http.StatusBadRequest, -1128, "Combination of optional parameters invalid.")
			return q, false
		}
	}
	if q.hasStart && q.hasEnd && q.end-q.start > window.Milliseconds() {
		writeErr(w, http.StatusBadRequest, -1127, fmt.Sprintf("More than %d hours between startTime and endTime.", int(window.Hours())))
		return q, false
	}
	return q, true
}

// handleCancel is DELETE /api/v3/order (rest-api.md "Cancel order") and
// DELETE /fapi/v1/order (trade/rest-api/Cancel-Order.md): symbol, and
// orderId or origClientOrderId. Only an active order (NEW,
// PARTIALLY_FILLED) can be cancelled; any other — already cancelled,
// filled, expired, or never placed — is -2011 "Unknown order sent."
// (errors.md, -2011 CANCEL_REJECTED).
func (s *Server) handleCancel(market string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		params, ok := s.authenticate(w, r)
		if !ok {
			return
		}
		symbol, id, orderID := params.Get("symbol"), params.Get("origClientOrderId"), params.Get("orderId")
		if symbol == "" {
			writeErr(w, http.StatusBadRequest, -1102, "Mandatory parameter 'symbol' was not sent, was empty/null, or malformed.")
			return
		}
		if id == "" && orderID == "" {
			writeErr(w, http.StatusBadRequest, -1102, "Param 'origClientOrderId' or 'orderId' must be sent, but both were empty/null!")
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := s.symbols[symbol]; !ok {
			writeErr(w, http.StatusBadRequest, -1121, "Invalid symbol.")
			return
		}
		for _, o := range slices.Backward(s.orders) {
			if o.Market != market || o.Symbol != symbol {
				continue
			}
			if (id != "" && o.ClientOrderID != id) || (orderID != "" && strconv.FormatInt(o.OrderID, 10) != orderID) {
				continue
			}
			if !o.Open() {
				break
			}
			o.Status = "CANCELED"
			s.cancels++
			m := orderJSON(o, false)
			if market == MarketSpot {
				m["origClientOrderId"] = o.ClientOrderID
			}
			writeJSON(w, http.StatusOK, m)
			return
		}
		writeErr(w, http.StatusBadRequest, -2011, "Unknown order sent.")
	}
}

// listBookOrders are the orders of symbol's OCO lists as the trade list
// sees them (market, symbol, orderId, side); callers hold mu.
func (s *Server) listBookOrders(symbol string) []*Order {
	var out []*Order
	for _, l := range s.lists {
		if l.Symbol != symbol {
			continue
		}
		for _, o := range []ListOrder{l.Above, l.Below} {
			out = append(out, &Order{Market: MarketSpot, Symbol: l.Symbol, OrderID: o.OrderID, ClientOrderID: o.ClientOrderID, Side: l.Side})
		}
	}
	return out
}
