package binancefake

import (
	"net/http"
	"strconv"
	"time"

	"github.com/shopspring/decimal"
)

// OrderList is one spot OCO order list (rest-api.md, "New Order list -
// OCO", POST /api/v3/orderList/oco): an above and a below order for one
// quantity, where the execution of one cancels the other. The fake never
// triggers either; ExpireList ends a list by hand.
type OrderList struct {
	OrderListID       int64
	ListClientOrderID string
	Symbol            string
	Side              string // BUY or SELL
	Quantity          decimal.Decimal
	Above, Below      ListOrder
	// Status is the list's listOrderStatus: EXECUTING while it rests,
	// ALL_DONE once it ended (enums.md, "Order List Order Status").
	Status string
	Time   time.Time
}

// ListOrder is one order of an OrderList.
type ListOrder struct {
	OrderID       int64
	ClientOrderID string
	Type          string // LIMIT_MAKER, TAKE_PROFIT, STOP_LOSS
	Price         decimal.Decimal
	StopPrice     decimal.Decimal
	// TrailingDelta is a trailing stop order's trailingDelta in BIPS (the
	// OCO's stop order may trail: faqs/trailing-stop-faq.md, "OCO orders
	// also support trailing stop orders in the contingent leg").
	TrailingDelta int64
	// Status is the order's own status: NEW while the list rests,
	// CANCELED once the list was cancelled, EXPIRED once ExpireList ended
	// it (the order query shows it, rest-api.md "Query order"), FILLED
	// once MovePrice executed it (the other one EXPIRED).
	Status string
	// ExecutedQty and CumQuote are what it executed (the order query's
	// executedQty, cummulativeQuoteQty).
	ExecutedQty, CumQuote decimal.Decimal
}

// OrderLists are the OCO order lists the fake holds, oldest first.
func (s *Server) OrderLists() []OrderList {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]OrderList, 0, len(s.lists))
	for _, l := range s.lists {
		out = append(out, *l)
	}
	return out
}

// ExpireList ends the open list listClientOrderID (ALL_DONE): its
// listClientOrderId may then be used again, as Binance allows once the
// previous list is "filled or completely expired".
func (s *Server) ExpireList(listClientOrderID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.lists {
		if l.ListClientOrderID == listClientOrderID && l.Status == "EXECUTING" {
			l.Status, l.Above.Status, l.Below.Status = "ALL_DONE", "EXPIRED", "EXPIRED"
		}
	}
}

// LoseNextOrderList makes the next OCO placement answer -1007 ("Timeout
// waiting for response from backend server. Send status unknown;
// execution status unknown.") without ever booking the list: the answer
// is lost and nothing exists, as when Binance's backend dropped it.
func (s *Server) LoseNextOrderList() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loseList = true
}

// ocoTakeProfit and ocoStopLoss are the OCO order types the fake takes
// (rest-api.md: one order "must be a LIMIT_MAKER/TAKE_PROFIT/
// TAKE_PROFIT_LIMIT order and the other must be STOP_LOSS or
// STOP_LOSS_LIMIT"); the *_LIMIT types are refused -1158 as unsupported
// by the fake.
var (
	ocoTakeProfit = map[string]bool{"LIMIT_MAKER": true, "TAKE_PROFIT": true}
	ocoStopLoss   = map[string]bool{"STOP_LOSS": true}
)

// handleNewOCO is POST /api/v3/orderList/oco. It enforces the doc's
// rules: the types (one take-profit kind, one stop-loss kind, else -1158
// "Order type not supported in OCO."), the price restrictions against the
// last traded price (SELL: take-profit price > last > stop-loss
// stopPrice; BUY the reverse, else -2010 "The relationship of the prices
// for the orders is not correct.", errors.md), the tick and step
// (-1013), listClientOrderId unique among open lists and the orders'
// client IDs unique among open orders (-2010 "Duplicate order sent."),
// and the balance the list sells (a SELL list needs the free base asset
// for its quantity beyond what open SELL lists already hold: -2010
// insufficient balance). The stop order may trail (belowTrailingDelta on
// a SELL list, with or without a stopPrice) within the symbol's
// TRAILING_DELTA range, where allowTrailingStop.
func (s *Server) handleNewOCO(w http.ResponseWriter, r *http.Request) {
	if !s.waitHeldPlacement(r) {
		return
	}
	p, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loseList {
		s.loseList = false
		writeErr(w, http.StatusServiceUnavailable, -1007, "Timeout waiting for response from backend server. Send status unknown; execution status unknown.")
		return
	}
	bad := func(code int, msg string) { writeErr(w, http.StatusBadRequest, code, msg) }
	for _, k := range []string{"symbol", "side", "quantity", "aboveType", "belowType"} {
		if p.Get(k) == "" {
			bad(-1102, "Mandatory parameter '"+k+"' was not sent, was empty/null, or malformed.")
			return
		}
	}
	sym, ok := s.symbols[p.Get("symbol")]
	if !ok {
		bad(-1121, "Invalid symbol.")
		return
	}
	side := p.Get("side")
	if side != "BUY" && side != "SELL" {
		bad(-1117, "Invalid side.")
		return
	}
	aboveType, belowType := p.Get("aboveType"), p.Get("belowType")
	// SELL: the take-profit is above the market, the stop below; BUY the
	// reverse.
	tpType, slType, tpPos, slPos := aboveType, belowType, "above", "below"
	if side == "BUY" {
		tpType, slType, tpPos, slPos = belowType, aboveType, "below", "above"
	}
	if !ocoTakeProfit[tpType] || !ocoStopLoss[slType] {
		bad(-1158, "Order type not supported in OCO.")
		return
	}
	qty, err := decimal.NewFromString(p.Get("quantity"))
	if err != nil || !qty.IsPositive() || (sym.StepSize.IsPositive() && !qty.Mod(sym.StepSize).IsZero()) ||
		qty.LessThan(sym.MinQty) || (sym.MaxQty.IsPositive() && qty.GreaterThan(sym.MaxQty)) {
		bad(-1013, "Filter failure: LOT_SIZE")
		return
	}
	price := func(name string) (decimal.Decimal, bool) {
		d, err := decimal.NewFromString(p.Get(name))
		if err != nil || !d.IsPositive() || (sym.TickSize.IsPositive() && !d.Mod(sym.TickSize).IsZero()) {
			return d, false
		}
		return d, true
	}
	tp := ListOrder{Type: tpType, ClientOrderID: p.Get(tpPos + "ClientOrderId")}
	sl := ListOrder{Type: slType, ClientOrderID: p.Get(slPos + "ClientOrderId")}
	tpField := tpPos + "StopPrice"
	if tpType == "LIMIT_MAKER" {
		tpField = tpPos + "Price"
	}
	var okTP, okSL bool
	tpTrigger, okTP := price(tpField)
	if tpType == "LIMIT_MAKER" {
		tp.Price = tpTrigger
	} else {
		tp.StopPrice = tpTrigger
	}
	// The stop order takes a stopPrice, a trailingDelta, or both
	// ("Either belowStopPrice or belowTrailingDelta or both, must be
	// specified").
	if raw := p.Get(slPos + "TrailingDelta"); raw != "" {
		d, err := strconv.ParseInt(raw, 10, 64)
		lo, hi := sym.trailingBounds()
		switch {
		case !sym.AllowTrailingStop:
			bad(-2010, "Trailing stop orders are not supported for this symbol.")
			return
		case err != nil || d < lo || d > hi:
			bad(-1013, "Filter failure: TRAILING_DELTA")
			return
		}
		sl.TrailingDelta = d
	}
	okSL = true
	if p.Get(slPos+"StopPrice") != "" || sl.TrailingDelta == 0 {
		sl.StopPrice, okSL = price(slPos + "StopPrice")
	}
	if !okTP || !okSL {
		bad(-1013, "Filter failure: PRICE_FILTER")
		return
	}
	last := sym.Price
	// A trailing stop without a stopPrice has no price to compare.
	stopOK := func(ok bool) bool { return ok || sl.StopPrice.IsZero() }
	if (side == "SELL" && !(tpTrigger.GreaterThan(last) && stopOK(last.GreaterThan(sl.StopPrice)))) ||
		(side == "BUY" && !(tpTrigger.LessThan(last) && stopOK(last.LessThan(sl.StopPrice)))) {
		bad(-2010, "The relationship of the prices for the orders is not correct.")
		return
	}
	id := p.Get("listClientOrderId")
	if id == "" {
		id = "fakelist" + strconv.FormatInt(s.nextID+1, 10)
	}
	for _, c := range []string{id, tp.ClientOrderID, sl.ClientOrderID} {
		if c != "" && !clientOrderIDPattern.MatchString(c) {
			bad(-1100, "Illegal characters found in parameter 'listClientOrderId'; legal range is '^[\\.A-Z\\:/a-z0-9_-]{1,36}$'.")
			return
		}
	}
	for _, l := range s.lists {
		if l.Status != "EXECUTING" {
			continue
		}
		if l.ListClientOrderID == id || l.Above.ClientOrderID == tp.ClientOrderID || l.Above.ClientOrderID == sl.ClientOrderID ||
			l.Below.ClientOrderID == tp.ClientOrderID || l.Below.ClientOrderID == sl.ClientOrderID {
			bad(-2010, "Duplicate order sent.")
			return
		}
	}
	adds := 0
	for _, o := range []ListOrder{tp, sl} {
		if spotAlgoTypes[o.Type] {
			adds++
		}
	}
	if s.algoCapRefused(w, MarketSpot, sym, adds) {
		return
	}
	if s.spotOrdersRefused(sym, 2) {
		bad(-1013, "Filter failure: MAX_NUM_ORDERS")
		return
	}
	locked := s.lockedByLists(sym.Symbol)
	if (side == "SELL" && s.balances[sym.Base].LessThan(qty.Add(locked))) ||
		(side == "BUY" && s.balances[sym.Quote].LessThan(qty.Mul(decimal.Max(sl.StopPrice, last)))) {
		bad(-2010, "Account has insufficient balance for requested action.")
		return
	}
	s.nextID++
	l := &OrderList{OrderListID: s.nextID, ListClientOrderID: id, Symbol: sym.Symbol, Side: side, Quantity: qty,
		Status: "EXECUTING", Time: s.now()}
	for _, o := range []*ListOrder{&tp, &sl} {
		s.nextID++
		o.OrderID, o.Status = s.nextID, "NEW"
		if o.ClientOrderID == "" {
			o.ClientOrderID = "fake" + strconv.FormatInt(o.OrderID, 10)
		}
	}
	l.Above, l.Below = tp, sl
	if side == "BUY" {
		l.Above, l.Below = sl, tp
	}
	s.lists = append(s.lists, l)
	body := listJSON(l)
	body["orderReports"] = listReports(l)
	writeJSON(w, http.StatusOK, body)
}

func listOrderJSON(l *OrderList, o ListOrder) map[string]any {
	m := map[string]any{"symbol": l.Symbol, "orderId": o.OrderID, "orderListId": l.OrderListID,
		"clientOrderId": o.ClientOrderID, "transactTime": l.Time.UnixMilli(), "price": str(o.Price),
		"origQty": str(l.Quantity), "executedQty": str(o.ExecutedQty), "cummulativeQuoteQty": str(o.CumQuote),
		"status": o.Status, "timeInForce": "GTC", "type": o.Type, "side": l.Side, "stopPrice": str(o.StopPrice),
		"selfTradePreventionMode": "NONE"}
	if o.TrailingDelta > 0 {
		m["trailingDelta"], m["trailingTime"] = o.TrailingDelta, -1
	}
	return m
}

func listReports(l *OrderList) []map[string]any {
	return []map[string]any{listOrderJSON(l, l.Below), listOrderJSON(l, l.Above)}
}

// listOrder finds the order of a spot list under clientOrderID, for the
// plain order query; callers hold mu.
func (s *Server) listOrder(symbol, clientOrderID string) (*OrderList, ListOrder, bool) {
	for i := len(s.lists) - 1; i >= 0; i-- {
		l := s.lists[i]
		for _, o := range []ListOrder{l.Above, l.Below} {
			if l.Symbol == symbol && o.ClientOrderID == clientOrderID {
				return l, o, true
			}
		}
	}
	return nil, ListOrder{}, false
}

// handleCancelOrderList is DELETE /api/v3/orderList (rest-api.md, "Cancel
// Order list"): symbol, and orderListId or listClientOrderId; the list
// ends ALL_DONE with both orders CANCELED, answered with the list and its
// orderReports. A list not resting (already ended, or none) is refused
// -2011 "Unknown order sent." (errors.md, -2011 CANCEL_REJECTED; the docs
// give no message of their own for lists: the plain cancel's is assumed).
func (s *Server) handleCancelOrderList(w http.ResponseWriter, r *http.Request) {
	p, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	id, listID := p.Get("listClientOrderId"), p.Get("orderListId")
	if p.Get("symbol") == "" || (id == "" && listID == "") {
		writeErr(w, http.StatusBadRequest, -1102, "Param 'orderListId' or 'listClientOrderId' must be sent, but both were empty/null!")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.lists) - 1; i >= 0; i-- {
		l := s.lists[i]
		if l.Symbol != p.Get("symbol") || (id != "" && l.ListClientOrderID != id) || (id == "" && strconv.FormatInt(l.OrderListID, 10) != listID) {
			continue
		}
		if l.Status != "EXECUTING" {
			break
		}
		l.Status, l.Above.Status, l.Below.Status = "ALL_DONE", "CANCELED", "CANCELED"
		body := listJSON(l)
		body["orderReports"] = listReports(l)
		writeJSON(w, http.StatusOK, body)
		return
	}
	writeErr(w, http.StatusBadRequest, -2011, "Unknown order sent.")
}

func listJSON(l *OrderList) map[string]any {
	statusType := "EXEC_STARTED"
	if l.Status == "ALL_DONE" {
		statusType = "ALL_DONE"
	}
	var orders []map[string]any
	for _, o := range []ListOrder{l.Below, l.Above} {
		orders = append(orders, map[string]any{"symbol": l.Symbol, "orderId": o.OrderID, "clientOrderId": o.ClientOrderID})
	}
	return map[string]any{"orderListId": l.OrderListID, "contingencyType": "OCO", "listStatusType": statusType,
		"listOrderStatus": l.Status, "listClientOrderId": l.ListClientOrderID, "transactionTime": l.Time.UnixMilli(),
		"symbol": l.Symbol, "orders": orders}
}

// handleQueryOrderList is GET /api/v3/orderList (rest-api.md, "Query
// Order list"): by orderListId or origClientOrderId (the
// listClientOrderId), the latest list under it; -2013 "Order list does
// not exist." when none.
func (s *Server) handleQueryOrderList(w http.ResponseWriter, r *http.Request) {
	p, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	id, listID := p.Get("origClientOrderId"), p.Get("orderListId")
	if id == "" && listID == "" {
		writeErr(w, http.StatusBadRequest, -1102, "Param 'origClientOrderId' or 'orderListId' must be sent, but both were empty/null!")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.lists) - 1; i >= 0; i-- {
		l := s.lists[i]
		if (id != "" && l.ListClientOrderID == id) || (id == "" && strconv.FormatInt(l.OrderListID, 10) == listID) {
			writeJSON(w, http.StatusOK, listJSON(l))
			return
		}
	}
	writeErr(w, http.StatusBadRequest, -2013, "Order list does not exist.")
}

// lockedByLists is the base quantity symbol's open SELL lists hold: not
// free for another sell; callers hold mu.
func (s *Server) lockedByLists(symbol string) decimal.Decimal {
	locked := decimal.Zero
	for _, l := range s.lists {
		if l.Status == "EXECUTING" && l.Symbol == symbol && l.Side == "SELL" {
			locked = locked.Add(l.Quantity)
		}
	}
	return locked
}
