package bybit

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/internal/venuekit"
)

var _ exchange.Canceler = (*Venue)(nil)

// cancelBody is POST /v5/order/cancel's body (order/cancel-order.mdx).
type cancelBody struct {
	Category    string `json:"category"`
	Symbol      string `json:"symbol"`
	OrderLinkID string `json:"orderLinkId"`
}

// Cancel cancels the order held under o.ClientOrderID by its orderLinkId
// (POST /v5/order/cancel, order/cancel-order.mdx). Bybit only cancels an
// unfilled or partially filled order and answers 110001 (linear) or
// 170213 (spot) "Order does not exist" for any other (error.mdx), so Cancel
// then looks the order up and reports it as it is: idempotent. The cancel
// is acknowledged before it is done ("This request is asynchronous"), so
// the order is asked about until it is closed, for at most ConfirmWait; an
// order still open then is reported open, and its follow job records the
// end. exchange.ErrNotFound when Bybit holds no such order.
func (v *Venue) Cancel(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	if o.Exit == exchange.RoleTrailingStop {
		return v.cancelTrailing(ctx, o)
	}
	sym := exchange.VenueSymbol(o.Symbol)
	body := cancelBody{Category: string(v.cfg.Market), Symbol: sym, OrderLinkID: o.ClientOrderID}
	err := v.do(ctx, request{method: http.MethodPost, path: "/v5/order/cancel", body: body, private: true}, nil)
	if e, ok := errors.AsType[*APIError](err); ok && (e.Code == 110001 || e.Code == 170213) {
		return v.Lookup(ctx, o)
	}
	if err != nil {
		return exchange.Report{}, fmt.Errorf("bybit cancel %s: %w", o.ClientOrderID, err)
	}
	var last exchange.Report
	var lastErr error
	try := func() bool {
		last, lastErr = v.find(ctx, sym, o.ClientOrderID, false)
		return lastErr == nil && last.Status.Final()
	}
	if !try() {
		_ = venuekit.Poll(ctx, v.cfg.ConfirmWait, try)
	}
	if lastErr != nil {
		return exchange.Report{}, fmt.Errorf("bybit cancel %s: look up after the cancel: %w", o.ClientOrderID, lastErr)
	}
	return last, nil
}
