package binancefake

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/shopspring/decimal"
)

// AlgoOrder is one conditional order of the USDⓈ-M Algo Order API
// (trade/rest-api/New-Algo-Order.md): a take-profit or stop that rests
// off the book until its trigger price is reached (MovePrice triggers it).
type AlgoOrder struct {
	AlgoID       int64
	ClientAlgoID string
	Symbol       string
	Side         string // BUY or SELL
	Type         string // STOP_MARKET, TAKE_PROFIT_MARKET, …
	Quantity     decimal.Decimal
	TriggerPrice decimal.Decimal
	// CallbackRate (percent) and ActivatePrice are a TRAILING_STOP_MARKET
	// order's; zero on the other types.
	CallbackRate  decimal.Decimal
	ActivatePrice decimal.Decimal
	ReduceOnly    bool
	Status        string // NEW, CANCELED, TRIGGERED, FINISHED
	Time          time.Time
	// ActualOrderID and ActualPrice are the market order a triggered
	// algo order became and its price (Query-Algo-Order.md:
	// actualOrderId, actualPrice); zero before.
	ActualOrderID int64
	ActualPrice   decimal.Decimal
}

// conditionalTypes are the order types USDⓈ-M takes only through the Algo
// Order API: the plain order endpoint answers -4120 for them.
var conditionalTypes = map[string]bool{"STOP": true, "STOP_MARKET": true, "TAKE_PROFIT": true,
	"TAKE_PROFIT_MARKET": true, "TRAILING_STOP_MARKET": true}

// AlgoOrders are the conditional orders the fake holds, oldest first.
func (s *Server) AlgoOrders() []AlgoOrder {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runEngine()
	out := make([]AlgoOrder, 0, len(s.algos))
	for _, a := range s.algos {
		out = append(out, *a)
	}
	return out
}

func algoJSON(a *AlgoOrder) map[string]any {
	// The doc's answer carries activatePrice and callbackRate as "" on an
	// order that is not a trailing stop (New-Algo-Order.md).
	rate, activate, trigger, actual := "", "", a.TriggerPrice.String(), ""
	if a.ActualOrderID != 0 {
		actual = strconv.FormatInt(a.ActualOrderID, 10)
	}
	if a.Type == "TRAILING_STOP_MARKET" {
		rate, activate = a.CallbackRate.String(), a.ActivatePrice.String()
	}
	return map[string]any{"activatePrice": activate, "callbackRate": rate, "algoId": a.AlgoID, "clientAlgoId": a.ClientAlgoID, "algoType": "CONDITIONAL",
		"orderType": a.Type, "symbol": a.Symbol, "side": a.Side, "positionSide": "BOTH", "timeInForce": "GTC",
		"quantity": a.Quantity.String(), "algoStatus": a.Status, "triggerPrice": trigger,
		"price": "0", "workingType": "CONTRACT_PRICE", "priceMatch": "NONE", "closePosition": false,
		"priceProtect": false, "reduceOnly": a.ReduceOnly, "createTime": a.Time.UnixMilli(),
		"actualOrderId": actual, "actualPrice": a.ActualPrice.StringFixed(5),
		"updateTime": a.Time.UnixMilli(), "triggerTime": 0, "goodTillDate": 0}
}

// handleNewAlgo is POST /fapi/v1/algoOrder (trade/rest-api/
// New-Algo-Order.md) for algoType CONDITIONAL: STOP_MARKET and
// TAKE_PROFIT_MARKET with a quantity and a triggerPrice (the other
// conditional types are refused as unsupported by the fake). A trigger the
// last price has already reached is refused -2021 "Order would immediately
// trigger." by the doc's trigger rules (TAKE_PROFIT SELL: price >=
// triggerPrice; STOP SELL: price <= triggerPrice; BUY the other way);
// the trigger must be on PRICE_FILTER's tick and the quantity on LOT_SIZE;
// clientAlgoId is unique among open algo orders; the symbol's
// MAX_NUM_ALGO_ORDERS caps the open ones (algocap.go, -4045).
func (s *Server) handleNewAlgo(w http.ResponseWriter, r *http.Request) {
	if !s.waitHeldPlacement(r) {
		return
	}
	p, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, faulted := s.takeAlgoFault(); faulted {
		s.newAlgoFaulted(w, p, f)
		return
	}
	s.newAlgo(w, p)
}

// newAlgo checks and books the algo order p asks for. Called with s.mu
// held.
func (s *Server) newAlgo(w http.ResponseWriter, p url.Values) {
	if p.Get("algoType") != "CONDITIONAL" {
		writeErr(w, http.StatusBadRequest, -1102, "Mandatory parameter 'algoType' was not sent, was empty/null, or malformed.")
		return
	}
	sym, ok := s.symbols[p.Get("symbol")]
	if !ok {
		writeErr(w, http.StatusBadRequest, -1121, "Invalid symbol.")
		return
	}
	side, typ := p.Get("side"), p.Get("type")
	if side != "BUY" && side != "SELL" {
		writeErr(w, http.StatusBadRequest, -1117, "Invalid side.")
		return
	}
	if typ != "STOP_MARKET" && typ != "TAKE_PROFIT_MARKET" && typ != "TRAILING_STOP_MARKET" {
		writeErr(w, http.StatusBadRequest, -1116, "Invalid orderType.")
		return
	}
	if typ == "TRAILING_STOP_MARKET" {
		s.newTrailingAlgo(w, p, sym)
		return
	}
	qty, err1 := decimal.NewFromString(p.Get("quantity"))
	trigger, err2 := decimal.NewFromString(p.Get("triggerPrice"))
	switch {
	case err1 != nil || !qty.IsPositive():
		writeErr(w, http.StatusBadRequest, -4003, "Quantity less than or equal to zero.")
		return
	case sym.StepSize.IsPositive() && !qty.Mod(sym.StepSize).IsZero():
		writeErr(w, http.StatusBadRequest, -4023, "Quantity not increased by step size.")
		return
	case err2 != nil || !trigger.IsPositive():
		writeErr(w, http.StatusBadRequest, -4006, "Stop price less than zero.")
		return
	case sym.TickSize.IsPositive() && !trigger.Mod(sym.TickSize).IsZero():
		writeErr(w, http.StatusBadRequest, -4014, "Price not increased by tick size.")
		return
	}
	last := sym.Price
	takeProfit := typ == "TAKE_PROFIT_MARKET"
	immediate := (takeProfit && side == "SELL" && !last.LessThan(trigger)) || (takeProfit && side == "BUY" && !last.GreaterThan(trigger)) ||
		(!takeProfit && side == "SELL" && !last.GreaterThan(trigger)) || (!takeProfit && side == "BUY" && !last.LessThan(trigger))
	if immediate {
		writeErr(w, http.StatusBadRequest, -2021, "Order would immediately trigger.")
		return
	}
	s.bookAlgo(w, p, sym, &AlgoOrder{Side: side, Type: typ, Quantity: qty, TriggerPrice: trigger})
}

// bookAlgo books the conditional order a (its type's own fields set) under
// the request's clientAlgoId, once the rules every algo order shares hold:
// a valid client ID that no open algo order carries, and room under the
// symbol's MAX_NUM_ALGO_ORDERS. The caller holds s.mu.
func (s *Server) bookAlgo(w http.ResponseWriter, p url.Values, sym Symbol, a *AlgoOrder) {
	id := p.Get("clientAlgoId")
	if !clientOrderIDPattern.MatchString(id) {
		writeErr(w, http.StatusBadRequest, -4015, "Client order id is not valid.")
		return
	}
	for _, o := range s.algos {
		if o.ClientAlgoID == id && o.Status == "NEW" {
			writeErr(w, http.StatusBadRequest, -4116, "ClientOrderId is duplicated.")
			return
		}
	}
	if s.algoCapRefused(w, MarketFutures, sym, 1) || s.accountAlgoCapRefused(w) {
		return
	}
	s.nextID++
	a.AlgoID, a.ClientAlgoID, a.Symbol = s.nextID, id, sym.Symbol
	a.ReduceOnly, a.Status, a.Time = p.Get("reduceOnly") == "true", "NEW", s.now()
	s.algos = append(s.algos, a)
	writeJSON(w, http.StatusOK, algoJSON(a))
}

// handleQueryAlgo is GET /fapi/v1/algoOrder (trade/rest-api/
// Query-Algo-Order.md): by algoId or clientAlgoId; -2013 when none.
func (s *Server) handleQueryAlgo(w http.ResponseWriter, r *http.Request) {
	p, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.algoNamed(w, p)
	if !ok {
		return
	}
	now := s.now()
	if a != nil {
		s.refreshAlgo(a)
	}
	// "These orders will not be found: order status is CANCELED or
	// EXPIRED AND order has NO filled trade AND created time + 3 days <
	// current time; order create time + 90 days < current time"
	// (Query-Algo-Order.md).
	if a == nil || ((a.Status == "CANCELED" || a.Status == "EXPIRED") && a.ActualOrderID == 0 && now.After(a.Time.Add(3*24*time.Hour))) ||
		now.After(a.Time.Add(90*24*time.Hour)) {
		writeErr(w, http.StatusBadRequest, -2013, "Order does not exist.")
		return
	}
	writeJSON(w, http.StatusOK, algoJSON(a))
}

// algoNamed is the latest algo order p names by clientAlgoId (or, without
// one, by algoId); nil when none. Both missing is answered -1102 here and
// ok is false. Call it with s.mu held.
func (s *Server) algoNamed(w http.ResponseWriter, p url.Values) (*AlgoOrder, bool) {
	id, algoID := p.Get("clientAlgoId"), p.Get("algoId")
	if id == "" && algoID == "" {
		writeErr(w, http.StatusBadRequest, -1102, "Param 'algoId' or 'clientAlgoId' must be sent, but both were empty/null!")
		return nil, false
	}
	for i := len(s.algos) - 1; i >= 0; i-- {
		a := s.algos[i]
		if (id != "" && a.ClientAlgoID == id) || (id == "" && strconv.FormatInt(a.AlgoID, 10) == algoID) {
			return a, true
		}
	}
	return nil, true
}

// handleCancelAlgo is DELETE /fapi/v1/algoOrder (trade/rest-api/
// Cancel-Algo-Order.md): "Cancel an active algo (conditional) order", by
// algoId or clientAlgoId; the answer is algoId, clientAlgoId, code "200"
// and msg "success", and the order is CANCELED from then on (the query,
// Query-Algo-Order.md, shows algoStatus CANCELED). One not active —
// already cancelled, or never placed — is -2011 "Unknown order sent."
// (error-code.md, -2011 CANCEL_REJECTED), as the plain cancel answers.
func (s *Server) handleCancelAlgo(w http.ResponseWriter, r *http.Request) {
	p, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.algoNamed(w, p)
	if !ok {
		return
	}
	if a == nil || a.Status != "NEW" {
		writeErr(w, http.StatusBadRequest, -2011, "Unknown order sent.")
		return
	}
	a.Status = "CANCELED"
	writeJSON(w, http.StatusOK, map[string]any{"algoId": a.AlgoID, "clientAlgoId": a.ClientAlgoID, "code": "200", "msg": "success"})
}

// CancelAlgoOrder cancels the open algo order clientAlgoID by hand (as
// from Binance's app), outside hoox.
func (s *Server) CancelAlgoOrder(clientAlgoID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.algos) - 1; i >= 0; i-- {
		if a := s.algos[i]; a.ClientAlgoID == clientAlgoID && a.Status == "NEW" {
			a.Status = "CANCELED"
			return nil
		}
	}
	return fmt.Errorf("cancel algo order %s: %w", clientAlgoID, ErrNoOrder)
}
