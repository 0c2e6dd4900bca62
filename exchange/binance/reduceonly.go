package binance

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
)

// cancelBlocking cancels the reduce-only orders resting on out's side of
// out.symbol, which made Binance refuse the reduce-only close out with
// -2022 "ReduceOnly Order is rejected." (error-code.md): USDⓈ-M counts
// the open reduce-only orders on a side against the position, so
// take-profit limits for the whole position block a market close. They
// are listed with GET /fapi/v1/openOrders (trade/rest-api/
// Current-All-Open-Orders.md) and cancelled one by one by orderId with
// DELETE /fapi/v1/order (trade/rest-api/Cancel-Order.md).
//
// Every reduce-only order on that side is cancelled, whoever placed it
// (PlacedByHoox records which): it can only reduce the position the close
// is about to flatten, and would find nothing to reduce afterwards. Place
// calls it only for a close that flattens (flattens): a partial close's
// -2022 is refused instead, as the orders protect what it leaves open. Orders
// on the other side, and orders that are not reduce-only, are left alone.
// A cancel is idempotent: -2011 "Unknown order sent." means the order is
// no longer resting (filled, cancelled meanwhile), which is what the close
// needs. It returns the orders it cancelled and how many blockers it found;
// an error (wrapping exchange.ErrUnreachable: the close was refused, so
// nothing of it exists) when Binance could not be asked or refused a
// cancel.
func (v *Venue) cancelBlocking(ctx context.Context, out outgoing) ([]exchange.CancelledOrder, error) {
	var open []struct {
		OrderID       int64           `json:"orderId"`
		ClientOrderID string          `json:"clientOrderId"`
		Side          string          `json:"side"`
		ReduceOnly    bool            `json:"reduceOnly"`
		OrigQty       decimal.Decimal `json:"origQty"`
		ExecutedQty   decimal.Decimal `json:"executedQty"`
	}
	list := request{method: http.MethodGet, path: v.prefix + "/openOrders", params: params{}.add("symbol", out.symbol), signed: true, weight: 1}
	if err := v.do(ctx, list, &open); err != nil {
		return nil, fmt.Errorf("binance: open orders of %s, to unblock close %s: %w: %w", out.symbol, out.clientID, exchange.ErrUnreachable, err)
	}
	cancelled := []exchange.CancelledOrder{}
	for _, o := range open {
		if !o.ReduceOnly || !strings.EqualFold(o.Side, out.side) {
			continue
		}
		p := params{}.add("symbol", out.symbol).add("orderId", strconv.FormatInt(o.OrderID, 10))
		err := v.do(ctx, request{method: http.MethodDelete, path: v.prefix + "/order", params: p, signed: true, weight: 1}, nil)
		if apiErr, ok := errors.AsType[*APIError](err); ok && apiErr.Code == -2011 {
			continue // no longer resting
		}
		if err != nil {
			return cancelled, fmt.Errorf("binance: cancel reduce-only order %d blocking close %s: %w: %w", o.OrderID, out.clientID, exchange.ErrUnreachable, err)
		}
		cancelled = append(cancelled, exchange.CancelledOrder{ClientOrderID: o.ClientOrderID, ExchangeOrderID: strconv.FormatInt(o.OrderID, 10),
			Side: strings.ToLower(o.Side), Remaining: o.OrigQty.Sub(o.ExecutedQty).String(), PlacedByHoox: strings.HasPrefix(o.ClientOrderID, "hx")})
	}
	return cancelled, nil
}
