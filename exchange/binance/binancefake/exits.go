package binancefake

import (
	"strconv"

	"github.com/shopspring/decimal"
)

// MovePrice moves symbol's last price to price, as the market does, and
// triggers what the move reaches:
//
//   - USDⓈ-M algo orders (TAKE_PROFIT_MARKET, STOP_MARKET) whose trigger
//     the price crossed, by the rules the placement checks (TAKE_PROFIT
//     SELL: price >= triggerPrice; STOP SELL: price <= triggerPrice; BUY
//     the other way). Each becomes a reduce-only MARKET order that fills at
//     price (user-data-streams/Event-Algo-Order-Update.md, "Algo Status":
//     TRIGGERING, TRIGGERED — "placed into the matching engine" — then
//     FINISHED — "filled or canceled in the matching engine"; with
//     HoldMarketOrders the order rests and the algo order stays TRIGGERED
//     until FillOrder or CancelOrder ends it); the query
//     shows it FINISHED with actualOrderId and actualPrice
//     (trade/rest-api/Query-Algo-Order.md). One with no position left to
//     reduce is CANCELED with nothing placed, as the doc's example event
//     shows ("X": "CANCELED", "rm": "Reduce Only reject"). Trailing stops
//     are not trailed by the fake.
//   - spot OCO lists: a SELL list's LIMIT_MAKER fills at its price when
//     price reaches it, its STOP_LOSS fills at price when price falls to its
//     stopPrice (a BUY list the other way round); the other order of the
//     list is then EXPIRED and the list ALL_DONE — "if one of the orders
//     execute, the other is automatically expired" (binance-spot-api-docs
//     faqs/spot_glossary.md, OCO). The sale moves the balances and is in
//     the account trade list under the executed order's orderId.
//   - spot lone exit orders: a STOP_LOSS or TAKE_PROFIT with a stopPrice
//     executes as a MARKET order at price once price reaches its stop
//     (rest-api.md, "New order": they "will execute a MARKET order when
//     the conditions are met"; SELL STOP_LOSS as the price falls to it,
//     SELL TAKE_PROFIT as it rises, BUY the other way round), a
//     LIMIT_MAKER fills at its price once price reaches it. Trailing
//     orders (trailingDelta without a stopPrice) are not trailed.
//   - resting GTC LIMIT orders, spot and USDⓈ-M: "on the book unless the
//     order is canceled" (enums.md, "Time in force", GTC), a BUY fills
//     at its price once the last price falls to it, a SELL once it rises
//     to it, in full. A reduce-only one is left resting (what it may
//     still reduce is not modelled).
//
// SetPrice moves the price without triggering anything.
func (s *Server) MovePrice(symbol string, price decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sym := s.symbols[symbol]
	sym.Price = price
	s.symbols[symbol] = sym
	for _, a := range s.algos {
		if a.Symbol == symbol && a.Status == "NEW" && algoReached(a, price) {
			s.triggerAlgo(a, price)
		}
	}
	for _, o := range s.orders {
		if o.Market == MarketSpot && o.Symbol == symbol && o.Open() {
			if at, ok := spotExitReached(o, price); ok {
				s.execute(o, o.Quantity.Sub(o.ExecutedQty), at)
				o.Status = "FILLED"
				continue
			}
		}
		if o.Symbol == symbol && o.Open() && limitReached(o, price) {
			s.execute(o, o.Quantity.Sub(o.ExecutedQty), o.Price)
			o.Status = "FILLED"
		}
	}
	for _, l := range s.lists {
		if l.Symbol != symbol || l.Status != "EXECUTING" {
			continue
		}
		for _, o := range []*ListOrder{&l.Above, &l.Below} {
			if at, ok := listOrderReached(l.Side, o, price); ok {
				s.executeListOrder(l, o, at)
				break
			}
		}
	}
}

// algoReached reports whether the last price p triggers a.
func algoReached(a *AlgoOrder, p decimal.Decimal) bool {
	switch {
	case a.Type == "TAKE_PROFIT_MARKET" && a.Side == "SELL", a.Type == "STOP_MARKET" && a.Side == "BUY":
		return !p.LessThan(a.TriggerPrice)
	case a.Type == "TAKE_PROFIT_MARKET" && a.Side == "BUY", a.Type == "STOP_MARKET" && a.Side == "SELL":
		return !p.GreaterThan(a.TriggerPrice)
	}
	return false
}

// triggerAlgo turns a into a reduce-only market order filled at price;
// callers hold mu.
func (s *Server) triggerAlgo(a *AlgoOrder, price decimal.Decimal) {
	pos := s.positions[a.Symbol]
	reducible := decimal.Zero
	if (a.Side == "SELL" && pos.IsPositive()) || (a.Side == "BUY" && pos.IsNegative()) {
		reducible = pos.Abs()
	}
	qty := decimal.Min(a.Quantity, reducible)
	if !a.ReduceOnly {
		qty = a.Quantity
	}
	if !qty.IsPositive() {
		a.Status = "CANCELED"
		return
	}
	s.nextID++
	now := s.now()
	o := &Order{Market: MarketFutures, Symbol: a.Symbol, OrderID: s.nextID, ClientOrderID: TriggeredOrderID(a.AlgoID),
		Side: a.Side, Type: "MARKET", Quantity: qty, Status: "NEW", ReduceOnly: a.ReduceOnly, Time: now, VisibleAt: now}
	s.orders = append(s.orders, o)
	a.Status, a.ActualOrderID, a.ActualPrice = "TRIGGERED", o.OrderID, price
	if s.holdLeft > 0 {
		// Held (HoldMarketOrders): the order works in the matching
		// engine, the algo order stays TRIGGERED until it ends.
		s.holdLeft--
		o.fillOnQuery = -1
		return
	}
	s.execute(o, qty, price)
	o.Status = "FILLED"
	a.Status = "FINISHED"
}

// TriggeredOrderID is the client order ID of the market order the fake's
// algo order algoID became once triggered (FillOrder, CancelOrder and
// Trades take it).
func TriggeredOrderID(algoID int64) string { return "algo" + strconv.FormatInt(algoID, 10) }

// refreshAlgo moves a TRIGGERED algo order to FINISHED once the order it
// became ended ("filled or canceled in the matching engine",
// Event-Algo-Order-Update.md); callers hold mu.
func (s *Server) refreshAlgo(a *AlgoOrder) {
	if a.Status != "TRIGGERED" {
		return
	}
	for _, o := range s.orders {
		if o.Market == MarketFutures && o.OrderID == a.ActualOrderID && !o.Open() {
			a.Status = "FINISHED"
		}
	}
}

// listOrderReached reports whether the last price p executes o, an order
// of a list on side, and at which price.
func listOrderReached(side string, o *ListOrder, p decimal.Decimal) (decimal.Decimal, bool) {
	sell := side == "SELL"
	switch o.Type {
	case "LIMIT_MAKER":
		if (sell && !p.LessThan(o.Price)) || (!sell && !p.GreaterThan(o.Price)) {
			return o.Price, true
		}
	case "STOP_LOSS", "TAKE_PROFIT":
		// A stop on a SELL list triggers as the price falls to it (a
		// TAKE_PROFIT as it rises); then a market order at p.
		down := o.Type == "STOP_LOSS" == sell
		if (down && !p.GreaterThan(o.StopPrice)) || (!down && !p.LessThan(o.StopPrice)) {
			return p, true
		}
	}
	return decimal.Zero, false
}

// executeListOrder fills o, an order of the list l, at price for the
// list's quantity, expires the other order and ends the list; callers hold
// mu.
func (s *Server) executeListOrder(l *OrderList, o *ListOrder, price decimal.Decimal) {
	book := &Order{Market: MarketSpot, Symbol: l.Symbol, OrderID: o.OrderID, ClientOrderID: o.ClientOrderID, Side: l.Side}
	s.execute(book, l.Quantity, price)
	o.Status, o.ExecutedQty, o.CumQuote = "FILLED", book.ExecutedQty, book.CumQuote
	for _, other := range []*ListOrder{&l.Above, &l.Below} {
		if other != o {
			other.Status = "EXPIRED"
		}
	}
	l.Status = "ALL_DONE"
}

// limitReached reports whether the last price p reaches o, a resting
// LIMIT order that is not reduce-only.
func limitReached(o *Order, p decimal.Decimal) bool {
	if o.Type != "LIMIT" || o.ReduceOnly || !o.Price.IsPositive() {
		return false
	}
	if o.Side == "BUY" {
		return !p.GreaterThan(o.Price)
	}
	return !p.LessThan(o.Price)
}

// spotExitReached reports whether the last price p executes o, a resting
// spot exit order, and at which price.
func spotExitReached(o *Order, p decimal.Decimal) (decimal.Decimal, bool) {
	sell := o.Side == "SELL"
	switch {
	case o.Type == "LIMIT_MAKER":
		if (sell && !p.LessThan(o.Price)) || (!sell && !p.GreaterThan(o.Price)) {
			return o.Price, true
		}
	case (o.Type == "STOP_LOSS" || o.Type == "TAKE_PROFIT") && o.StopPrice.IsPositive():
		down := (o.Type == "STOP_LOSS") == sell
		if (down && !p.GreaterThan(o.StopPrice)) || (!down && !p.LessThan(o.StopPrice)) {
			return p, true
		}
	}
	return decimal.Zero, false
}
