package bybitfake

import (
	"encoding/json"
	"net/http"

	"github.com/shopspring/decimal"
)

// PathCancel is POST /v5/order/cancel (order/cancel-order.mdx).
const PathCancel = "/v5/order/cancel"

// Fee rates the fake charges. Bybit reports an order's fees per coin in
// cumFeeDetail for linear and spot (order/open-order.mdx: cumExecFee is
// deprecated there): linear charges the settle coin; spot the coin
// received (the base coin on a buy, the quote coin on a sell).
var (
	LinearFeeRate = decimal.RequireFromString("0.00055")
	SpotFeeRate   = decimal.RequireFromString("0.001")
)

// feeDetail is the order's cumFeeDetail: coin → cumulative fee; s.mu is
// held.
func (s *Server) feeDetail(o *Order) map[string]string {
	out := map[string]string{}
	if !o.CumExecQty.IsPositive() {
		return out
	}
	in := s.instruments[o.Category][o.Symbol]
	value := o.CumExecQty.Mul(o.AvgPrice)
	switch {
	case o.Category == CategorySpot && s.spotFeeRate != nil:
		// What SetSpotFeeRate charged, in the coin received.
		if o.CumExecFee.IsPositive() {
			coin := in.QuoteCoin
			if o.Side == "Buy" {
				coin = in.BaseCoin
			}
			out[coin] = o.CumExecFee.String()
		}
	case o.Category == CategoryLinear:
		out[in.QuoteCoin] = value.Mul(LinearFeeRate).String()
	case o.Side == "Buy":
		out[in.BaseCoin] = o.CumExecQty.Mul(SpotFeeRate).String()
	default:
		out[in.QuoteCoin] = value.Mul(SpotFeeRate).String()
	}
	return out
}

type cancelRequest struct {
	Category    string `json:"category"`
	Symbol      string `json:"symbol"`
	OrderID     string `json:"orderId"`
	OrderLinkID string `json:"orderLinkId"`
}

// serveCancel is POST /v5/order/cancel: category and symbol, and orderId
// or orderLinkId. Only an unfilled or partially filled order can be
// cancelled (order/cancel-order.mdx); any other — filled, already
// cancelled, never placed — is 110001 "Order does not exist" on linear,
// 170213 "Order does not exist." on spot (error.mdx). A partially filled
// spot order ends PartiallyFilledCanceled (enum.mdx, orderStatus); every
// other one Cancelled. s.mu is held.
func (s *Server) serveCancel(_ *http.Request, body []byte) reply {
	var req cancelRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return fail(10001, "params error: request body is not valid json")
	}
	if req.Category != CategoryLinear && req.Category != CategorySpot {
		return fail(10001, "params error: category invalid")
	}
	if req.Symbol == "" || (req.OrderID == "" && req.OrderLinkID == "") {
		return fail(10001, "params error: symbol, and orderId or orderLinkId, are required")
	}
	notFound := fail(110001, "Order does not exist")
	if req.Category == CategorySpot {
		notFound = fail(170213, "Order does not exist.")
	}
	s.runLate()
	var o *Order
	for _, b := range s.book {
		if b.Category == req.Category && ((req.OrderID != "" && b.OrderID == req.OrderID) || (req.OrderID == "" && b.OrderLinkID == req.OrderLinkID)) {
			o = b
		}
	}
	if o == nil || o.Symbol != req.Symbol || !isOpen(o.Status) || s.clock().Before(o.VisibleAt) {
		return notFound
	}
	s.cancel(o)
	return ok(map[string]string{"orderId": o.OrderID, "orderLinkId": o.OrderLinkID})
}

// cancel ends the open order o as Bybit does (enum.mdx, orderStatus): a
// spot order that filled in part is PartiallyFilledCanceled ("Only spot
// has this order status"), every other one Cancelled — in derivatives
// "orders with this status may have an executed qty" —, keeping what
// executed; a spot order's unfilled rest frees its balance. s.mu is held.
func (s *Server) cancel(o *Order) {
	if o.Category == CategorySpot {
		s.unlock(s.instruments[o.Category][o.Symbol], o.Side, o.Qty.Sub(o.CumExecQty), o.Price)
	}
	o.Status = "Cancelled"
	if o.Category == CategorySpot && o.CumExecQty.IsPositive() {
		o.Status = "PartiallyFilledCanceled"
	}
}

// CancelOrder cancels the open order under linkID on Bybit's side — the
// account's owner in Bybit's app, or Bybit itself (SMP, a delisting) —
// as POST /v5/order/cancel would, keeping what filled. It reports whether
// such an open order exists.
func (s *Server) CancelOrder(category, linkID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runLate()
	o, ok := s.orders[orderKey{category, linkID}]
	if !ok || !isOpen(o.Status) {
		return false
	}
	s.cancel(o)
	return true
}
