package okx

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/internal/venuekit"
)

var _ exchange.Canceler = (*Venue)(nil)

// cancelUnderWay is OKX's refusal of a cancel because the order "is
// already in canceling status or pending settlement" (51410,
// Error_Code/Rest_API/Public.md).
const cancelUnderWay = 51410

// cancelBody is POST /api/v5/trade/cancel-order's body.
type cancelBody struct {
	InstID  string `json:"instId"`
	ClOrdID string `json:"clOrdId"`
}

// Cancel cancels the order held under o.ClientOrderID by its clOrdId (POST
// /api/v5/trade/cancel-order, OKX/Order_Book_Trading/Trade/
// Post_Cancel_Order.md). OKX refuses with 51400 "the order has been
// filled, canceled or does not exist" (Error_Code/Rest_API/Public.md), so
// Cancel then looks the order up and reports it as it is: idempotent. An
// accepted cancel "only means that your cancellation request has been
// accepted", so the order is asked about until it is closed, for at most
// ConfirmWait; still open then, it is reported open and its follow job
// records the end. A cancel refused because one is already under way
// (51410) is followed the same way. exchange.ErrNotFound when OKX holds no
// such order. A
// trailing stop (an algo order) is cancelled through the algo endpoint
// (cancelTrailing).
func (v *Venue) Cancel(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	if o.Exit == exchange.RoleTrailingStop {
		return v.cancelTrailing(ctx, o)
	}
	symbol := exchange.VenueSymbol(o.Symbol)
	f, found, err := v.filtersFor(ctx, symbol)
	if err != nil {
		return exchange.Report{}, fmt.Errorf("okx: cancel order %s: %w", o.ClientOrderID, err)
	}
	if !found {
		return exchange.Report{}, fmt.Errorf("okx: cancel order %s: unknown symbol %s: %w", o.ClientOrderID, symbol, exchange.ErrNotFound)
	}
	err = v.do(ctx, request{method: http.MethodPost, path: "/api/v5/trade/cancel-order",
		body: cancelBody{InstID: f.InstID, ClOrdID: o.ClientOrderID}, private: true, instID: f.InstID}, nil)
	e, isAPI := errors.AsType[*APIError](err)
	switch {
	case isAPI && e.Code == 51400:
		return v.Lookup(ctx, o)
	case isAPI && e.Code == cancelUnderWay:
		// An earlier cancel (this one's first try, another replica's) is
		// under way: OKX holds the order until it ends, and the order is
		// asked about as after an accepted cancel.
		err = nil
	}
	if err != nil {
		return exchange.Report{}, fmt.Errorf("okx: cancel order %s: %w", o.ClientOrderID, err)
	}
	var last exchange.Report
	var lastErr error
	try := func() bool {
		last, lastErr = v.Lookup(ctx, o)
		return lastErr == nil && last.Status.Final()
	}
	if !try() {
		_ = venuekit.Poll(ctx, v.cfg.ConfirmWait, try)
	}
	if lastErr != nil {
		return exchange.Report{}, fmt.Errorf("okx: cancel order %s: look up after the cancel: %w", o.ClientOrderID, lastErr)
	}
	return last, nil
}
