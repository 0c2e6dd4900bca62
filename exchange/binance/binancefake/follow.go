package binancefake

import (
	"net/http"
	"slices"
	"strconv"

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

// handleMyTrades is the account trade list: GET /api/v3/myTrades (spot,
// rest-api.md "Account trade list") and GET /fapi/v1/userTrades (USDⓈ-M,
// trade/rest-api/Account-Trade-List.md). symbol is mandatory; orderId only
// with it.
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
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := s.symbols[symbol]; !ok {
			writeErr(w, http.StatusBadRequest, -1121, "Invalid symbol.")
			return
		}
		out := []map[string]any{}
		orders := s.orders
		if market == MarketSpot {
			// An OCO list's executed order trades like any other.
			orders = append(slices.Clone(orders), s.listBookOrders(symbol)...)
		}
		for _, o := range orders {
			if o.Market != market || o.Symbol != symbol {
				continue
			}
			if id := params.Get("orderId"); id != "" && id != strconv.FormatInt(o.OrderID, 10) {
				continue
			}
			for _, t := range s.tradesOf(o) {
				m := map[string]any{"symbol": t.Symbol, "id": t.ID, "orderId": t.OrderID, "price": t.Price.String(),
					"qty": t.Qty.String(), "quoteQty": t.QuoteQty.String(), "commission": t.Commission.String(),
					"commissionAsset": t.CommissionAsset, "time": t.Time}
				if market == MarketFutures {
					m["buyer"], m["maker"], m["side"], m["positionSide"], m["realizedPnl"] = t.Buyer, true, o.Side, "BOTH", "0"
				} else {
					m["orderListId"], m["isBuyer"], m["isMaker"], m["isBestMatch"] = -1, t.Buyer, true, true
				}
				out = append(out, m)
			}
		}
		writeJSON(w, http.StatusOK, out)
	}
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
