package okx

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/internal/venuekit"
)

// resolveClose turns a close, close_long or close_short into the market
// order that flattens what the account holds: on swaps a reduce-only
// order for the whole net position, on spot a sell of the available base
// currency. reason is set when there is nothing to close.
func (v *Venue) resolveClose(ctx context.Context, o exchange.Order, f Filters, out outgoing) (outgoing, string, error) {
	out.market = true
	if !v.swap() {
		if o.Action == "close_short" {
			return out, ReasonSpotNoShort, nil
		}
		free, err := v.freeBalance(ctx, f.BaseCcy)
		if err != nil {
			return out, "", err
		}
		out.side, out.qty = "sell", free
		if !venuekit.FloorTo(free, f.Step).IsPositive() {
			return out, ReasonNoPosition, nil
		}
		return out, "", nil
	}
	var res []struct {
		InstID  string `json:"instId"`
		Pos     string `json:"pos"`
		PosSide string `json:"posSide"`
	}
	q := url.Values{"instType": {"SWAP"}, "instId": {f.InstID}}
	if err := v.do(ctx, request{method: http.MethodGet, path: "/api/v5/account/positions", query: q, private: true}, &res); err != nil {
		return out, "", fmt.Errorf("okx: position %s: %w", f.InstID, asUnreachable(err))
	}
	var pos decimal.Decimal
	for _, p := range res {
		if p.InstID == f.InstID && (p.PosSide == "net" || p.PosSide == "") {
			pos = pos.Add(venuekit.Dec(p.Pos))
		}
	}
	switch {
	case pos.IsPositive() && o.Action != "close_short":
		out.side = "sell"
	case pos.IsNegative() && o.Action != "close_long":
		out.side = "buy"
	default:
		return out, ReasonNoPosition, nil
	}
	out.qty, out.reduceOnly = f.fromWire(pos.Abs()), true
	return out, "", nil
}

// freeBalance is the available balance of ccy in the trading account.
func (v *Venue) freeBalance(ctx context.Context, ccy string) (decimal.Decimal, error) {
	var res []struct {
		Details []struct {
			Ccy      string `json:"ccy"`
			AvailBal string `json:"availBal"`
		} `json:"details"`
	}
	q := url.Values{"ccy": {ccy}}
	if err := v.do(ctx, request{method: http.MethodGet, path: "/api/v5/account/balance", query: q, private: true}, &res); err != nil {
		return decimal.Zero, fmt.Errorf("okx: balance of %s: %w", ccy, asUnreachable(err))
	}
	for _, acct := range res {
		for _, d := range acct.Details {
			if d.Ccy == ccy {
				return venuekit.Dec(d.AvailBal), nil
			}
		}
	}
	return decimal.Zero, nil
}

// ensureLeverage sets the swap's cross leverage when it differs from the
// last value this venue set. A refusal returns its reason.
func (v *Venue) ensureLeverage(ctx context.Context, instID string, lever int) (string, error) {
	v.mu.Lock()
	cur := v.leverage[instID]
	v.mu.Unlock()
	if cur == lever {
		return "", nil
	}
	body := map[string]string{"instId": instID, "lever": strconv.Itoa(lever), "mgnMode": "cross"}
	err := v.do(ctx, request{method: http.MethodPost, path: "/api/v5/account/set-leverage", body: body, private: true}, nil)
	if e, ok := errors.AsType[*APIError](err); ok && e.Refused() {
		return "set leverage " + strconv.Itoa(lever) + ": " + e.Msg, nil
	}
	if err != nil {
		return "", fmt.Errorf("okx: set leverage %d on %s: %w", lever, instID, asUnreachable(err))
	}
	v.mu.Lock()
	v.leverage[instID] = lever
	v.mu.Unlock()
	return "", nil
}
