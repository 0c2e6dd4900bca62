package binance

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

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

// closedExits cancels hoox's exits that filled close o (r, Binance's
// answer or lookup of it; side its executed side) left resting with
// nothing to protect, wherever hoox first learns the close filled: Place's
// own answer (started: Binance's clock before its position read) or
// Lookup's (the sweeper, the reconcile, a retry's adoption, the follow
// job of a close Binance answered NEW; started zero: Lookup does not know
// when the close read the position). Only USDⓈ-M closes that executed
// something: an entry's exits and an exit itself are not closes of a
// position. See cancelClosedExits for
// which exits go; whole says o was a close of the whole position in one
// order (not a part of a split close, nor a percent_of_position share)
// that executed all it was sent for.
func (v *Venue) closedExits(ctx context.Context, o exchange.Order, r exchange.Report, symbol, side string, started time.Time) exchange.Report {
	if !v.futures() {
		return r
	}
	return exchange.ClosedExits(o, r, started, func(cutoff time.Time, whole bool) ([]exchange.CancelledOrder, bool, bool) {
		return v.cancelClosedExits(ctx, symbol, side, o.ClientOrderID, cutoff, whole)
	})
}

// CancelExitsAfterClose implements exchange.ExitsAfterCloseCanceler: the
// second look, once the exits' sends that were on their way during the
// close r have ended, for those Binance booked after the close's listing.
// exits are the gateway's: recorded open, planned before the close's
// intent (their entries filled before the close read the position, so
// they protected what it closed) and not cancelled by the close's own
// look. Each is cancelled by clientAlgoId (DELETE /fapi/v1/algoOrder,
// Cancel-Algo-Order.md), whatever the position is now — an entry beside
// the close, or the sender's next signal, places exits of its own, which
// are not named. No listing and no position read: a close whose exits
// were all seen by its own look costs nothing more. -2011 (no longer
// active: triggered, or cancelled meanwhile) is skipped.
func (v *Venue) CancelExitsAfterClose(ctx context.Context, o exchange.Order, r exchange.Report, exits []string) []exchange.CancelledOrder {
	if !v.futures() || !r.ClosedPosition {
		return nil
	}
	var cancelled []exchange.CancelledOrder
	for _, id := range exits {
		var ans struct {
			AlgoID       int64  `json:"algoId"`
			ClientAlgoID string `json:"clientAlgoId"`
		}
		err := v.do(ctx, request{method: http.MethodDelete, path: v.prefix + "/algoOrder",
			params: params{}.add("clientAlgoId", id), signed: true, weight: 1}, &ans)
		if apiErr, ok := errors.AsType[*APIError](err); ok && (apiErr.Code == -2011 || apiErr.Class == ClassNotFound) {
			continue // no longer resting
		}
		if err == nil && ans.ClientAlgoID != id {
			err = fmt.Errorf("answered for algo %d %q", ans.AlgoID, ans.ClientAlgoID)
		}
		if err != nil {
			v.log.ErrorContext(ctx, "binance: a close left its position gone, but an exit of it that reached Binance after the close was not cancelled",
				"client_order_id", o.ClientOrderID, "exit_client_order_id", id, "error", err)
			continue
		}
		cancelled = append(cancelled, exchange.CancelledOrder{ClientOrderID: id, ExchangeOrderID: strconv.FormatInt(ans.AlgoID, 10),
			Side: r.Side, PlacedByHoox: true})
	}
	return cancelled
}

// cancelClosedExits cancels hoox's exits left resting on the side of
// symbol that a filled close just closed (side is the close's: sell for a
// long's). On USDⓈ-M hoox places an entry's
// take-profit, stop-loss and trailing stop after the fill as reduce-only
// algo orders (algo.go): they are not in GET /fapi/v1/openOrders, so
// cancelBlocking never sees them, and Binance does not refuse the close
// for them (-2022 counts plain orders), nor cancel them when the position
// is gone. Left resting, a long's SELL stop-loss would sell the symbol's
// next long. The position is one-way (hedge mode is refused), so every
// exit of that side — whichever strategy's — protected the position that
// is gone.
//
// They are listed with GET /fapi/v1/openAlgoOrders?symbol= (trade/
// rest-api/Current-All-Algo-Open-Orders.md, weight 1: the open algo
// orders, TP/SL and trailing stops, with clientAlgoId, side and
// reduceOnly) and cancelled one by one by clientAlgoId with DELETE
// /fapi/v1/algoOrder (Cancel-Algo-Order.md). Only reduce-only orders of
// side whose clientAlgoId carries hoox's prefix are cancelled: an algo
// order the trader placed by hand is theirs to keep. -2011 (no longer
// active: triggered, or cancelled meanwhile) is skipped.
//
// The close has filled: nothing here may fail it. What could not be
// listed or cancelled is logged; the exit's follow job keeps looking at
// it, and a sibling that fills cancels it.
//
// Signals of one symbol are not run one at a time: an entry may fill
// beside the close (between its position read and its send, or after its
// fill). So the exits are listed first and the position read after. Flat,
// every listed exit protects nothing and is cancelled. Not flat (an entry
// filled beside the close), only the exits created by the time the close
// began (started, Binance's clock: before it read the position) are
// cancelled — they protected the position it closed, and would cut the
// new one — while an exit created since is the new entry's. An entry that
// fills after the position read places its exits after the listing: they
// are not in it. started zero (Lookup: the close's position read is not
// known there; the order's creation time is after it, and an entry that
// filled and placed its stop-loss between the two is still open) cancels
// nothing unless the position is flat.
//
// A close that was not whole (a share, a part of a split close, a close
// of the whole position that met too little liquidity and expired after
// a partial fill) cancels exits only when the position is flat after it:
// while some of the position is open, the exits protect it — the trader
// is not out, and the next close that flattens it cancels them. So a
// split close's exits go with the part that flattens the position.
//
// closed says the position the close closed is gone: flat, or whole (when
// the position could not be read, whole alone).
func (v *Venue) cancelClosedExits(ctx context.Context, symbol, side, closeID string, started time.Time, whole bool) (cancelled []exchange.CancelledOrder, closed, beside bool) {
	var open []struct {
		AlgoID       int64           `json:"algoId"`
		ClientAlgoID string          `json:"clientAlgoId"`
		Side         string          `json:"side"`
		ReduceOnly   bool            `json:"reduceOnly"`
		Quantity     decimal.Decimal `json:"quantity"`
		AlgoStatus   string          `json:"algoStatus"`
		CreateTime   int64           `json:"createTime"`
	}
	list := request{method: http.MethodGet, path: v.prefix + "/openAlgoOrders", params: params{}.add("symbol", symbol), signed: true, weight: 1}
	if err := v.do(ctx, list, &open); err != nil {
		v.log.ErrorContext(ctx, "binance: a close filled, but its side's resting exits could not be listed to cancel them",
			"client_order_id", closeID, "symbol", symbol, "error", err)
		return nil, whole, false
	}
	pos, err := v.position(ctx, symbol)
	switch {
	case err != nil:
		v.log.ErrorContext(ctx, "binance: a close filled, but the position could not be read again to cancel its side's resting exits",
			"client_order_id", closeID, "symbol", symbol, "error", err)
		return nil, whole, false
	case !pos.amount.IsZero() && !whole:
		return nil, false, false // what is left of the position keeps its exits
	case !pos.amount.IsZero() && started.IsZero():
		v.log.WarnContext(ctx, "binance: a close of the whole position filled, but a position is open again (an entry beside it) and when the close read the position is not known here: no exit is cancelled",
			"client_order_id", closeID, "symbol", symbol, "position", pos.amount.String())
		return nil, whole, whole
	case !pos.amount.IsZero():
		v.log.WarnContext(ctx, "binance: a close of the whole position filled, but a position is open again (an entry beside it): only the exits created before the close are cancelled",
			"client_order_id", closeID, "symbol", symbol, "position", pos.amount.String())
	}
	flat := pos.amount.IsZero()
	for _, a := range open {
		if !a.ReduceOnly || !strings.EqualFold(a.Side, side) || !strings.HasPrefix(a.ClientAlgoID, "hx") ||
			(!flat && a.CreateTime > started.UnixMilli()) {
			continue
		}
		var ans struct {
			AlgoID       int64  `json:"algoId"`
			ClientAlgoID string `json:"clientAlgoId"`
		}
		err := v.do(ctx, request{method: http.MethodDelete, path: v.prefix + "/algoOrder",
			params: params{}.add("clientAlgoId", a.ClientAlgoID), signed: true, weight: 1}, &ans)
		if apiErr, ok := errors.AsType[*APIError](err); ok && (apiErr.Code == -2011 || apiErr.Class == ClassNotFound) {
			continue // no longer resting
		}
		if err == nil && ans.ClientAlgoID != a.ClientAlgoID {
			err = fmt.Errorf("answered for algo %d %q", ans.AlgoID, ans.ClientAlgoID)
		}
		if err != nil {
			v.log.ErrorContext(ctx, "binance: a close of the whole position filled, but a resting exit of its side was not cancelled",
				"client_order_id", closeID, "symbol", symbol, "exit_client_order_id", a.ClientAlgoID, "error", err)
			continue
		}
		cancelled = append(cancelled, exchange.CancelledOrder{ClientOrderID: a.ClientAlgoID, ExchangeOrderID: strconv.FormatInt(a.AlgoID, 10),
			Side: strings.ToLower(a.Side), Remaining: a.Quantity.String(), PlacedByHoox: true})
	}
	if len(cancelled) > 0 {
		v.log.InfoContext(ctx, "binance: a close filled and left its position gone; its side's resting exits cancelled",
			"client_order_id", closeID, "symbol", symbol, "cancelled", len(cancelled))
	}
	return cancelled, true, !flat
}
