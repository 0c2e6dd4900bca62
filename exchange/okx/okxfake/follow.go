package okxfake

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/shopspring/decimal"
)

// PathCancel is POST /api/v5/trade/cancel-order
// (OKX/Order_Book_Trading/Trade/Post_Cancel_Order.md).
const PathCancel = "/api/v5/trade/cancel-order"

// Fee rates the fake charges. OKX reports an order's accumulated fee in
// fee and feeCcy, as a negative number when charged
// (Get_Order_Details.md: "For spot and margin, it is accumulated fee
// charged by the platform. It is always negative"): spot charges the
// currency received (base on a buy, quote on a sell), swaps the settle
// currency.
var (
	SpotFeeRate = decimal.RequireFromString("0.001")
	SwapFeeRate = decimal.RequireFromString("0.0005")
)

// feeOf is o's fee (negative, as OKX shows it) and its currency; s.mu is
// held.
func (s *Server) feeOf(o *Order) (decimal.Decimal, string) {
	if !o.AccFillSz.IsPositive() {
		return decimal.Zero, ""
	}
	in := s.instruments[o.InstID]
	switch {
	case in.InstType != InstSwap && s.spotFeeRate != nil:
		// What SetSpotFeeRate charged.
		if o.Fee.IsZero() {
			return decimal.Zero, ""
		}
		return o.Fee, o.FeeCcy
	case in.InstType == InstSwap:
		return o.AccFillSz.Mul(in.CtVal).Mul(o.AvgPx).Mul(SwapFeeRate).Neg(), in.SettleCcy
	case o.Side == "buy":
		return o.AccFillSz.Mul(SpotFeeRate).Neg(), in.BaseCcy
	}
	return o.AccFillSz.Mul(o.AvgPx).Mul(SpotFeeRate).Neg(), in.QuoteCcy
}

// PartialFill fills sz more (contracts on a swap) of a pending order at
// its price; it stays partially_filled until all of it has filled.
func (s *Server) PartialFill(clOrdID string, sz decimal.Decimal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.latest(clOrdID)
	if o == nil || !o.Pending() {
		return ErrNoOrder
	}
	sz = decimal.Min(sz, o.Sz.Sub(o.AccFillSz))
	in := s.instruments[o.InstID]
	signed := sz
	if o.Side == "sell" {
		signed = signed.Neg()
	}
	if in.InstType == InstSwap {
		s.positions[o.InstID] = s.positions[o.InstID].Add(signed)
	} else {
		s.balances[in.BaseCcy] = s.balances[in.BaseCcy].Add(signed)
		s.balances[in.QuoteCcy] = s.balances[in.QuoteCcy].Sub(signed.Mul(o.Px))
	}
	o.AccFillSz, o.AvgPx, o.State = o.AccFillSz.Add(sz), o.Px, "partially_filled"
	if o.AccFillSz.Equal(o.Sz) {
		o.State = "filled"
		if in.InstType == InstSwap {
			s.generateAttached(o)
		}
	}
	return nil
}

type cancelBody struct {
	InstID  string `json:"instId"`
	OrdID   string `json:"ordId"`
	ClOrdID string `json:"clOrdId"`
}

// DelayCancels makes every cancel the fake accepts take effect d later on
// its clock: OKX's sCode 0 "only means that your cancellation request has
// been accepted by the system server" (Post_Cancel_Order.md), and a cancel
// of an order whose cancel is under way is refused with 51410
// "Cancellation failed as the order is already in canceling status or
// pending settlement." (Error_Code/Rest_API/Public.md). 0 (the default)
// cancels at once.
func (s *Server) DelayCancels(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancelDelay = d
}

// finishCancels ends the cancels under way that are due; callers hold mu.
func (s *Server) finishCancels(now time.Time) {
	for _, o := range s.orders {
		if o.Pending() && !o.CancelAt.IsZero() && !now.Before(o.CancelAt) {
			o.State = "canceled"
		}
	}
}

// serveCancel is POST /api/v5/trade/cancel-order: instId, and ordId or
// clOrdId (51000 / 51407 without them). Only an incomplete order (live,
// partially_filled) is cancelled; any other answers sCode 51400 "Order
// cancellation failed as the order has been filled, canceled or does not
// exist." (Error_Code/Rest_API/Public.md), and one whose cancel is under
// way (DelayCancels) 51410. A success is the cancel's acceptance (sCode
// 0).
func (s *Server) serveCancel(_ *http.Request, body []byte) reply {
	var b cancelBody
	if err := json.Unmarshal(body, &b); err != nil {
		return fail(http.StatusBadRequest, 50002, "JSON syntax error")
	}
	if b.InstID == "" {
		return fail(http.StatusBadRequest, 51000, "Parameter instId error")
	}
	if b.OrdID == "" && b.ClOrdID == "" {
		return orderFail(b.ClOrdID, 51407, "Either order ID or client order ID is required.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runEngine()
	now := s.now()
	for i := len(s.orders) - 1; i >= 0; i-- {
		o := s.orders[i]
		if o.InstID != b.InstID || now.Before(o.VisibleAt) {
			continue
		}
		if (b.OrdID != "" && o.OrdID == b.OrdID) || (b.OrdID == "" && o.ClOrdID == b.ClOrdID) {
			if !o.Pending() {
				break
			}
			if !o.CancelAt.IsZero() {
				return orderFail(b.ClOrdID, 51410, "Cancellation failed as the order is already in canceling status or pending settlement.")
			}
			if s.cancelDelay > 0 {
				o.CancelAt = now.Add(s.cancelDelay)
			} else {
				o.State = "canceled"
			}
			return ok([]map[string]string{{"ordId": o.OrdID, "clOrdId": o.ClOrdID, "sCode": "0", "sMsg": ""}})
		}
	}
	return orderFail(b.ClOrdID, 51400, "Order cancellation failed as the order has been filled, canceled or does not exist.")
}
