package bybitfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"

	"github.com/shopspring/decimal"
)

// orderLinkIDPattern is Bybit's documented rule: at most 36 characters of
// letters, digits, dashes and underscores.
var orderLinkIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,36}$`)

type createRequest struct {
	Category    string `json:"category"`
	Symbol      string `json:"symbol"`
	Side        string `json:"side"`
	OrderType   string `json:"orderType"`
	Qty         string `json:"qty"`
	Price       string `json:"price"`
	TimeInForce string `json:"timeInForce"`
	OrderLinkID string `json:"orderLinkId"`
	ReduceOnly  bool   `json:"reduceOnly"`
	MarketUnit  string `json:"marketUnit"`
	PositionIdx int    `json:"positionIdx"`
	TakeProfit  string `json:"takeProfit"`
	StopLoss    string `json:"stopLoss"`
	TpslMode    string `json:"tpslMode"`
	TpTriggerBy string `json:"tpTriggerBy"`
	SlTriggerBy string `json:"slTriggerBy"`
	TpOrderType string `json:"tpOrderType"`
	SlOrderType string `json:"slOrderType"`
}

// codes names the retCodes and messages one category answers with, so that
// the refusal logic is written once for both. The wording follows Bybit's
// error-code page where it gives one.
type codes struct {
	linear                                                                                          bool
	param, symbol, side, orderType, qty, qtyStep, minQty, price, tick, notional, balance, duplicate int
}

func codesFor(category string) codes {
	if category == CategoryLinear {
		return codes{linear: true, param: 10001, symbol: 10001, side: 10001, orderType: 10001, qty: 10001, qtyStep: 10001,
			minQty: 10001, price: 10001, tick: 10001, notional: 110094, balance: 110007, duplicate: 110072}
	}
	return codes{param: 170130, symbol: 170121, side: 170117, orderType: 170116, qty: 170130, qtyStep: 170137,
		minQty: 170136, price: 170130, tick: 170134, notional: 170140, balance: 170131, duplicate: 170141}
}

func (c codes) msg(code int, linear, spot string) reply {
	if c.linear {
		return fail(code, linear)
	}
	return fail(code, spot)
}

// serveCreate is POST /v5/order/create; s.mu is held.
func (s *Server) serveCreate(_ *http.Request, body []byte) reply {
	var req createRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return fail(10001, "params error: request body is not valid json")
	}
	if req.Category != CategoryLinear && req.Category != CategorySpot {
		return fail(10001, "params error: category invalid")
	}
	c := codesFor(req.Category)
	if req.Category == CategoryLinear && (req.PositionIdx == 0) == s.hedge {
		// Place Order: positionIdx 0 one-way mode, 1 hedge-mode Buy side,
		// 2 hedge-mode Sell side; the wrong one for the account's mode is
		// refused.
		return fail(10001, "position idx not match position mode")
	}
	if req.OrderLinkID != "" {
		s.attempts[req.OrderLinkID]++
		if !orderLinkIDPattern.MatchString(req.OrderLinkID) {
			return c.msg(c.param, "params error: orderLinkId invalid", "Data sent for paramter 'orderLinkId' is not valid.")
		}
	}
	in, known := s.instruments[req.Category][req.Symbol]
	if !known || in.status() != "Trading" {
		// error.mdx names no code for a symbol that is not trading; the
		// fake answers as for an unknown one.
		return c.msg(c.symbol, "params error: symbol invalid", "Invalid symbol.")
	}
	if req.Side != "Buy" && req.Side != "Sell" {
		return c.msg(c.side, "params error: side invalid", "Invalid side.")
	}
	if req.OrderType != "Market" && req.OrderType != "Limit" {
		return c.msg(c.orderType, "params error: orderType invalid", "Invalid orderType.")
	}
	qty, err := decimal.NewFromString(req.Qty)
	if err != nil || !qty.IsPositive() {
		return c.msg(c.qty, "params error: qty invalid", "Data sent for paramter 'qty' is not valid.")
	}
	if req.OrderLinkID != "" {
		if _, taken := s.orders[orderKey{req.Category, req.OrderLinkID}]; taken {
			return c.msg(c.duplicate, "OrderLinkedID is duplicate", "Duplicate clientOrderId")
		}
	}
	last, hasTicker := s.tickers[req.Category][req.Symbol]
	var price decimal.Decimal
	if req.OrderType == "Limit" {
		price, err = decimal.NewFromString(req.Price)
		if err != nil || !price.IsPositive() {
			return c.msg(c.price, "params error: price invalid", "Data sent for paramter 'price' is not valid.")
		}
		if !price.Mod(in.TickSize).IsZero() {
			return c.msg(c.tick, "params error: price precision invalid", "Order price decimal too long.")
		}
	} else if !hasTicker {
		return c.msg(c.param, "params error: no market price for symbol", "Data sent for paramter 'symbol' is not valid.")
	}
	refPrice := price
	if req.OrderType == "Market" {
		refPrice = last
	}
	tp, sl, refusal, refused := s.checkTPSL(req, c, in, refPrice)
	if refused {
		return refusal
	}

	// Spot market buys are by quote amount unless marketUnit says base.
	baseQty := qty
	if req.Category == CategorySpot && req.OrderType == "Market" && req.Side == "Buy" && req.MarketUnit != "baseCoin" {
		if qty.Exponent() < -8 {
			return fail(170148, "Market order amount decimal too long")
		}
		if qty.LessThan(in.MinNotional) {
			return fail(c.notional, "Order value exceeded lower limit")
		}
		baseQty = qty.Div(refPrice).Truncate(-in.QtyStep.Exponent())
	} else {
		if !qty.Mod(in.QtyStep).IsZero() {
			return c.msg(c.qtyStep, "params error: qty precision invalid", "Order volume decimal too long")
		}
		if req.Category == CategoryLinear && qty.LessThan(in.MinOrderQty) {
			return fail(c.minQty, "The number of contracts exceeds minimum limit allowed")
		}
		if req.Category == CategoryLinear && req.OrderType == "Market" && qty.GreaterThan(in.maxMkt()) {
			// lotSizeFilter.maxMktOrderQty: "Maximum quantity for Market
			// order" (instrument.mdx). error.mdx lists no code of its own
			// for it; the fake answers with the minimum's counterpart.
			return fail(c.minQty, "The number of contracts exceeds maximum limit allowed: too large")
		}
		if req.Category == CategorySpot && req.OrderType == "Market" && qty.GreaterThan(in.maxMkt()) {
			// lotSizeFilter.maxMarketOrderQty: "Maximum Market order
			// quantity" (instrument.mdx; maxOrderAmt is no longer
			// checked). error.mdx names no code for it; the fake answers
			// 170341 "Request order quantity exceeds maximum limit".
			return fail(170341, "Request order quantity exceeds maximum limit")
		}
		if qty.Mul(refPrice).LessThan(in.MinNotional) {
			return c.msg(c.notional, fmt.Sprintf("Order does not meet minimum order value %s%s", in.MinNotional, in.QuoteCoin), "Order value exceeded lower limit")
		}
	}

	if req.Category == CategoryLinear && req.ReduceOnly {
		p := s.positions[req.Symbol]
		switch {
		case p.Size.IsZero():
			return fail(110017, "current position is zero, cannot fix reduce-only order qty")
		case p.Side == req.Side:
			return fail(110017, "reduce-only order has same side with current position")
		case baseQty.GreaterThan(p.Size):
			baseQty = p.Size // Bybit trims a reduce-only order to the position
			qty = p.Size
		}
	}
	if req.Category == CategorySpot {
		// A buy spends the quote coin's available balance: what open
		// linear positions and orders hold as margin is not free (margin.go).
		base := s.balances[in.BaseCoin]
		if req.Side == "Sell" && base.WalletBalance.Sub(base.Locked).LessThan(baseQty) ||
			req.Side == "Buy" && s.available(in.QuoteCoin).LessThan(baseQty.Mul(refPrice)) {
			return fail(c.balance, "Balance insufficient")
		}
	}
	if req.Category == CategoryLinear && !req.ReduceOnly &&
		s.openingMargin(req.Symbol, req.Side, baseQty, refPrice).GreaterThan(s.available(in.QuoteCoin)) {
		// The initial margin of what the order opens must fit in what the
		// account has available, the margin of open positions and orders
		// excluded (margin.go).
		return fail(c.balance, "Available balance is insufficient")
	}

	if req.Category == CategoryLinear && req.TpslMode == "Partial" {
		if r, refused := s.partialTPSLRefused(req.Symbol, !tp.IsZero(), !sl.IsZero()); refused {
			return r
		}
	}
	now := s.clock()
	s.nextID++
	o := &Order{
		Category: req.Category, Symbol: req.Symbol, OrderLinkID: req.OrderLinkID,
		OrderID: fmt.Sprintf("%08x-0000-4000-8000-%012x", s.nextID, s.nextID),
		Side:    req.Side, OrderType: req.OrderType, Qty: qty, Price: price,
		TimeInForce: req.TimeInForce, ReduceOnly: req.ReduceOnly, MarketUnit: req.MarketUnit,
		Status: "New", CreatedAt: now, VisibleAt: now,
		TakeProfit: tp, StopLoss: sl,
	}
	if !tp.IsZero() || !sl.IsZero() {
		o.TpslMode, o.TpTriggerBy, o.SlTriggerBy = req.TpslMode, req.TpTriggerBy, req.SlTriggerBy
		if req.Category == CategoryLinear {
			// Bybit's defaults (create-order.mdx: tpslMode, tpTriggerBy,
			// slTriggerBy).
			o.TpslMode = cmpOr(o.TpslMode, "Full")
			o.TpTriggerBy, o.SlTriggerBy = cmpOr(o.TpTriggerBy, "LastPrice"), cmpOr(o.SlTriggerBy, "LastPrice")
		}
	}
	if req.Category == CategorySpot {
		o.OrderID = fmt.Sprintf("%019d", 1700000000000000000+s.nextID)
	}
	if s.lagLeft > 0 {
		s.lagLeft--
		o.VisibleAt = now.Add(s.lag)
	}
	if s.hideLeft > 0 {
		s.hideLeft--
		o.HiddenFor = s.hideFor
	}
	if req.OrderType == "Market" {
		o.TimeInForce = "IOC"
		if req.Category == CategoryLinear {
			// Bybit shows a linear market order's slippage-protection price.
			o.Price = last.Mul(decimal.RequireFromString("1.05")).Truncate(-in.TickSize.Exponent())
		}
		fill := baseQty
		if liq, capped := s.liquidity[orderKey{req.Category, req.Symbol}]; capped && liq.LessThan(fill) {
			fill = liq
		}
		switch {
		case fill.Equal(baseQty):
			o.Status, o.CumExecQty, o.AvgPrice = "Filled", fill, last
		case fill.IsPositive():
			o.Status, o.CumExecQty, o.AvgPrice = "PartiallyFilledCanceled", fill, last
		default:
			o.Status = "Cancelled"
		}
		if fill.IsPositive() {
			s.settle(req.Category, in, o, fill, last)
		}
	} else if req.Category == CategorySpot {
		s.lock(in, req.Side, qty, price)
	}
	if o.TimeInForce == "" {
		o.TimeInForce = "GTC"
	}
	if req.OrderLinkID != "" {
		s.orders[orderKey{req.Category, req.OrderLinkID}] = o
	}
	s.book = append(s.book, o)
	rep := ok(map[string]string{"orderId": o.OrderID, "orderLinkId": o.OrderLinkID})
	rep.accepted = true
	return rep
}

// settle moves the position (linear) or the balances (spot) for a fill of
// qty of o, charging spot's fee (SetSpotFeeRate) in the coin received.
func (s *Server) settle(category string, in Instrument, o *Order, qty, price decimal.Decimal) {
	side := o.Side
	if category == CategoryLinear {
		p := s.positions[in.Symbol]
		signed := p.Size
		if p.Side == "Sell" {
			signed = signed.Neg()
		}
		if side == "Buy" {
			signed = signed.Add(qty)
		} else {
			signed = signed.Sub(qty)
		}
		switch {
		case signed.IsPositive():
			s.positions[in.Symbol] = keepTrailing(p, Position{Side: "Buy", Size: signed})
		case signed.IsNegative():
			s.positions[in.Symbol] = keepTrailing(p, Position{Side: "Sell", Size: signed.Neg()})
		default:
			s.positions[in.Symbol] = Position{}
		}
		return
	}
	base, quote := s.balances[in.BaseCoin], s.balances[in.QuoteCoin]
	value := qty.Mul(price)
	if side == "Buy" {
		base.WalletBalance = base.WalletBalance.Add(qty)
		quote.WalletBalance = quote.WalletBalance.Sub(value)
	} else {
		base.WalletBalance = base.WalletBalance.Sub(qty)
		quote.WalletBalance = quote.WalletBalance.Add(value)
	}
	if s.spotFeeRate != nil && s.spotFeeRate.IsPositive() {
		rate := *s.spotFeeRate
		if side == "Buy" {
			fee := qty.Mul(rate).Truncate(8)
			base.WalletBalance = base.WalletBalance.Sub(fee)
			o.CumExecFee = o.CumExecFee.Add(fee)
		} else {
			fee := value.Mul(rate).Truncate(8)
			quote.WalletBalance = quote.WalletBalance.Sub(fee)
			o.CumExecFee = o.CumExecFee.Add(fee)
		}
	}
	s.balances[in.BaseCoin], s.balances[in.QuoteCoin] = base, quote
}

// unlock releases what a resting spot order held for qty of it.
func (s *Server) unlock(in Instrument, side string, qty, price decimal.Decimal) {
	if side == "Sell" {
		b := s.balances[in.BaseCoin]
		b.Locked = b.Locked.Sub(qty)
		s.balances[in.BaseCoin] = b
		return
	}
	b := s.balances[in.QuoteCoin]
	b.Locked = b.Locked.Sub(qty.Mul(price))
	s.balances[in.QuoteCoin] = b
}

// lock holds what a resting spot order may spend.
func (s *Server) lock(in Instrument, side string, qty, price decimal.Decimal) {
	if side == "Sell" {
		b := s.balances[in.BaseCoin]
		b.Locked = b.Locked.Add(qty)
		s.balances[in.BaseCoin] = b
		return
	}
	b := s.balances[in.QuoteCoin]
	b.Locked = b.Locked.Add(qty.Mul(price))
	s.balances[in.QuoteCoin] = b
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// checkTPSL applies create-order.mdx's rules for a take-profit and a
// stop-loss set on the order (takeProfit, stopLoss, tpslMode, …):
//
//   - spot: "Spot Limit order supports take profit, stop loss": a market
//     order carrying them is refused;
//   - a reduce-only order cannot carry them ("When reduceOnly is true, take
//     profit/stop loss cannot be set");
//   - tpslMode is Full or Partial, and Full takes only Market tp/sl order
//     types; tpTriggerBy and slTriggerBy are LastPrice, IndexPrice or
//     MarkPrice (linear only);
//   - the prices are on the symbol's tick (priceFilter.tickSize);
//   - a Buy's take-profit is above the base price (the limit price, or the
//     last price for a market order) and its stop-loss below; a Sell's the
//     other way round. Bybit's answer to a take-profit on the wrong side
//     is retCode 10001 "TakeProfit:… set for Buy position should be higher
//     than base_price:…" (the wording the venue sends; the docs do not
//     list it).
//
// It returns the parsed prices (zero when not set), or the refusal.
func (s *Server) checkTPSL(req createRequest, c codes, in Instrument, base decimal.Decimal) (tp, sl decimal.Decimal, rep reply, refused bool) {
	if req.TakeProfit == "" && req.StopLoss == "" {
		return tp, sl, rep, false
	}
	bad := func(field string) reply {
		return c.msg(c.param, "params error: "+field+" invalid", "Data sent for paramter '"+field+"' is not valid.")
	}
	if req.Category == CategorySpot && req.OrderType != "Limit" {
		return tp, sl, fail(c.param, "TP/SL is only supported on spot limit orders"), true
	}
	if req.ReduceOnly {
		return tp, sl, fail(10001, "params error: reduce-only order cannot set TP/SL"), true
	}
	if req.Category == CategoryLinear {
		switch req.TpslMode {
		case "", "Partial":
		case "Full":
			if req.TpOrderType == "Limit" || req.SlOrderType == "Limit" {
				return tp, sl, fail(10001, "params error: tpslMode Full only supports Market tp/sl order types"), true
			}
		default:
			return tp, sl, bad("tpslMode"), true
		}
		for _, by := range []string{req.TpTriggerBy, req.SlTriggerBy} {
			if by != "" && by != "LastPrice" && by != "IndexPrice" && by != "MarkPrice" {
				return tp, sl, bad("triggerBy"), true
			}
		}
	}
	parse := func(field, text string) (decimal.Decimal, bool) {
		if text == "" {
			return decimal.Zero, true
		}
		p, err := decimal.NewFromString(text)
		if err != nil || !p.IsPositive() || !p.Mod(in.TickSize).IsZero() {
			return p, false
		}
		return p, true
	}
	var good bool
	if tp, good = parse("takeProfit", req.TakeProfit); !good {
		return tp, sl, bad("takeProfit"), true
	}
	if sl, good = parse("stopLoss", req.StopLoss); !good {
		return tp, sl, bad("stopLoss"), true
	}
	buy := req.Side == "Buy"
	switch {
	case !tp.IsZero() && buy && !tp.GreaterThan(base):
		return tp, sl, fail(10001, fmt.Sprintf("TakeProfit:%s set for Buy position should be higher than base_price:%s", tp, base)), true
	case !tp.IsZero() && !buy && !tp.LessThan(base):
		return tp, sl, fail(10001, fmt.Sprintf("TakeProfit:%s set for Sell position should be lower than base_price:%s", tp, base)), true
	case !sl.IsZero() && buy && !sl.LessThan(base):
		return tp, sl, fail(10001, fmt.Sprintf("StopLoss:%s set for Buy position should lower than base_price:%s", sl, base)), true
	case !sl.IsZero() && !buy && !sl.GreaterThan(base):
		return tp, sl, fail(10001, fmt.Sprintf("StopLoss:%s set for Sell position should be higher than base_price:%s", sl, base)), true
	}
	return tp, sl, rep, false
}
