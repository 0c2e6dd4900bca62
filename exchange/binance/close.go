package binance

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/internal/venuekit"
)

// resolveClose turns a close, close_long or close_short into the market
// order that flattens what the account holds: on futures a reduce-only
// order for all of the position pos (one-way mode), on spot a sell of the
// free base-asset balance — or, for a close the gateway sized from the
// strategy's spot ledger (Partial), of that size, at most the free
// balance. The signal's quantity is not used: the venue's position is the
// truth. reason is set when there is nothing to close, and when a close
// planned on a side (a split close's part, a percent_of_position exit)
// would now have to go the other way (venuekit.KeepsPlannedSide).
func (v *Venue) resolveClose(ctx context.Context, o exchange.Order, f Filters, out outgoing, pos positionInfo) (outgoing, string, error) {
	out.market = true
	if v.futures() {
		amt := pos.amount
		switch {
		case amt.IsPositive() && o.Action != "close_short":
			out.side = "sell"
		case amt.IsNegative() && o.Action != "close_long":
			out.side = "buy"
		default:
			return out, ReasonNoPosition, nil
		}
		if !venuekit.KeepsPlannedSide(o, out.side) {
			return out, ReasonNoPosition, nil
		}
		out.qty, out.reduceOnly = amt.Abs(), true
		if o.Partial {
			// A percent_of_position exit: the share sized before the
			// intent, never more than what is held now.
			out.qty = decimal.Min(o.Quantity, amt.Abs())
		}
		if f.RoundQuantity(out.qty, true).IsZero() {
			return out, ReasonNoPosition, nil
		}
		return out, "", nil
	}
	// Spot: close and close_long sell what is held; close_short was
	// refused in validate.
	free, err := v.freeBalance(ctx, f.BaseAsset)
	if err != nil {
		return out, "", err
	}
	out.side, out.qty = "sell", free
	if !venuekit.KeepsPlannedSide(o, out.side) {
		return out, ReasonNoPosition, nil
	}
	if o.Partial {
		out.qty = decimal.Min(o.Quantity, free)
	}
	if f.RoundQuantity(free, true).IsZero() {
		return out, ReasonNoPosition, nil
	}
	return out, "", nil
}

// positionInfo is what positionRisk says about a futures symbol.
type positionInfo struct {
	// amount is the position, signed (short < 0).
	amount decimal.Decimal
	// leverage is the symbol's leverage at Binance now (0 if not listed).
	leverage int
	// hedge is true when the account is in hedge mode
	// (dualSidePosition): positionRisk lists LONG and SHORT entries
	// instead of one BOTH entry.
	hedge bool
}

// position reads the futures position on symbol: its size, the leverage
// Binance holds for it (never a cached value: another replica or a manual
// change may have set it) and the account's position mode, in one
// request (Position Information V2 lists positionSide BOTH in one-way
// mode, LONG and SHORT in hedge mode).
func (v *Venue) position(ctx context.Context, symbol string) (positionInfo, error) {
	var risks []struct {
		Symbol       string          `json:"symbol"`
		PositionAmt  decimal.Decimal `json:"positionAmt"`
		Leverage     string          `json:"leverage"`
		PositionSide string          `json:"positionSide"`
	}
	req := request{method: http.MethodGet, path: "/fapi/v2/positionRisk", params: params{}.add("symbol", symbol), signed: true, weight: 5}
	if err := v.do(ctx, req, &risks); err != nil {
		return positionInfo{}, fmt.Errorf("binance: position for %s: %w", symbol, err)
	}
	var p positionInfo
	for _, r := range risks {
		if r.Symbol != symbol {
			continue
		}
		p.amount = p.amount.Add(r.PositionAmt)
		if r.PositionSide != "" && r.PositionSide != "BOTH" {
			p.hedge = true
		}
		if l, err := strconv.Atoi(r.Leverage); err == nil {
			p.leverage = l
		}
	}
	return p, nil
}

// freeBalance is the spot account's free balance of asset.
func (v *Venue) freeBalance(ctx context.Context, asset string) (decimal.Decimal, error) {
	var acct struct {
		Balances []struct {
			Asset string          `json:"asset"`
			Free  decimal.Decimal `json:"free"`
		} `json:"balances"`
	}
	req := request{method: http.MethodGet, path: v.prefix + "/account", params: params{}.add("omitZeroBalances", "true"), signed: true, weight: 20}
	if err := v.do(ctx, req, &acct); err != nil {
		return decimal.Zero, fmt.Errorf("binance: balance of %s: %w", asset, err)
	}
	for _, b := range acct.Balances {
		if b.Asset == asset {
			return b.Free, nil
		}
	}
	return decimal.Zero, nil
}

// ensureLeverage sets symbol's leverage on futures when the position's
// leverage at Binance (cur, read just before) differs. It is called only
// for an order that opens or adds to a position: a refused change (-4161,
// -2027) must not refuse an order that only reduces one, and the leverage
// of a position being reduced or closed does not matter.
//
// A refusal returns its reason: a code tabled as a refusal, or any code
// Binance answered with a 4xx that hoox does not table. An order's
// unlisted code may mean the order exists, but POST /fapi/v1/leverage
// places nothing, so an answered refusal of it (-4161, -4203, -4209,
// -4403 and the other ADJUST_LEVERAGE codes, error-code.md) is the
// entry's refusal, not an unreachable venue on every resend. A tabled
// transient code (-1001, -1008), a 5xx and a lost answer stay errors:
// nothing was placed, resend.
func (v *Venue) ensureLeverage(ctx context.Context, symbol string, cur, leverage int) (reason string, err error) {
	if !v.futures() || cur == leverage {
		return "", nil
	}
	l := strconv.Itoa(leverage)
	p := params{}.add("symbol", symbol).add("leverage", l)
	req := request{method: http.MethodPost, path: v.prefix + "/leverage", params: p, signed: true, weight: 1}
	err = v.do(ctx, req, nil)
	if err == nil {
		return "", nil
	}
	if e, ok := errors.AsType[*APIError](err); ok && (e.Refused() || answeredUntabled(e)) {
		return "set leverage " + l + ": " + e.Msg, nil
	}
	return "", fmt.Errorf("binance: set leverage %s on %s: %w", l, symbol, err)
}

// answeredUntabled reports whether e is Binance's own {code, msg} answer,
// with a 4xx status (429 and 418 are rate limits, never this), of a code
// neither errorClasses nor messageClasses lists: a request Binance refused
// for a reason hoox does not know.
func answeredUntabled(e *APIError) bool {
	return e.Class == ClassUnknown && e.Code != 0 && e.HTTPStatus >= 400 && e.HTTPStatus < 500 && !tabled(e.Code, e.Msg)
}
