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
// currency. reason is set when there is nothing to close, and when a close
// planned on a side (a split close's part, a percent_of_position exit)
// would now have to go the other way (venuekit.KeepsPlannedSide).
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
		if !venuekit.KeepsPlannedSide(o, out.side) {
			return out, ReasonNoPosition, nil
		}
		if o.Partial {
			out.qty = decimal.Min(o.Quantity, free)
		}
		if !venuekit.FloorTo(free, f.Step).IsPositive() {
			return out, ReasonNoPosition, nil
		}
		return out, "", nil
	}
	pos, err := v.netPosition(ctx, f.InstID)
	if err != nil {
		return out, "", err
	}
	switch {
	case pos.IsPositive() && o.Action != "close_short":
		out.side = "sell"
	case pos.IsNegative() && o.Action != "close_long":
		out.side = "buy"
	default:
		return out, ReasonNoPosition, nil
	}
	if !venuekit.KeepsPlannedSide(o, out.side) {
		return out, ReasonNoPosition, nil
	}
	out.qty, out.reduceOnly = f.fromWire(pos.Abs()), true
	if o.Partial {
		// A percent_of_position exit: the share sized before the intent,
		// never more than what is held now.
		out.qty = decimal.Min(o.Quantity, out.qty)
	}
	return out, "", nil
}

// netPosition is the swap's net position in contracts, signed.
func (v *Venue) netPosition(ctx context.Context, instID string) (decimal.Decimal, error) {
	var res []struct {
		InstID  string `json:"instId"`
		Pos     string `json:"pos"`
		PosSide string `json:"posSide"`
	}
	q := url.Values{"instType": {"SWAP"}, "instId": {instID}}
	if err := v.do(ctx, request{method: http.MethodGet, path: "/api/v5/account/positions", query: q, private: true}, &res); err != nil {
		return decimal.Zero, fmt.Errorf("okx: position %s: %w", instID, asUnreachable(err))
	}
	var pos decimal.Decimal
	for _, p := range res {
		if p.InstID == instID && (p.PosSide == "net" || p.PosSide == "") {
			pos = pos.Add(venuekit.Dec(p.Pos))
		}
	}
	return pos, nil
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

// hedgeMode reads the account's position mode: true in long_short_mode
// (hedge), false in net_mode (one-way), which hoox trades. Read for every
// swap order: an operator may switch it at any time.
func (v *Venue) hedgeMode(ctx context.Context) (bool, error) {
	var res []struct {
		PosMode string `json:"posMode"`
	}
	if err := v.do(ctx, request{method: http.MethodGet, path: "/api/v5/account/config", private: true}, &res); err != nil {
		return false, fmt.Errorf("okx: account config: %w", asUnreachable(err))
	}
	for _, c := range res {
		if c.PosMode == "long_short_mode" {
			return true, nil
		}
	}
	return false, nil
}

// leverage reads the swap's cross leverage at OKX now (0 when not
// listed): never a cached value, which another replica or a manual change
// may have made stale.
func (v *Venue) leverage(ctx context.Context, instID string) (int, error) {
	var res []struct {
		InstID string `json:"instId"`
		Lever  string `json:"lever"`
	}
	q := url.Values{"instId": {instID}, "mgnMode": {"cross"}}
	if err := v.do(ctx, request{method: http.MethodGet, path: "/api/v5/account/leverage-info", query: q, private: true}, &res); err != nil {
		return 0, fmt.Errorf("okx: leverage of %s: %w", instID, asUnreachable(err))
	}
	for _, l := range res {
		if l.InstID == instID {
			return int(venuekit.Dec(l.Lever).IntPart()), nil
		}
	}
	return 0, nil
}

// ensureLeverage sets the swap's cross leverage when the leverage OKX
// holds differs. A refusal returns its reason: a code tabled as one, or
// any code OKX answered (never with a 5xx) that ErrorTable does not list.
// An order's unlisted code may mean the order exists, but set-leverage
// places nothing, so an answered refusal of it (59102 above the maximum,
// 59000, 59103–59114, Error_Code/Rest_API/Account.md) is the entry's
// refusal, not an unreachable venue on every resend. A tabled transient
// code (50001, 50013), a 5xx and a lost answer stay errors: nothing was
// placed, resend.
//
// It is called only for an order that opens or adds to a position
// (venuekit.SetsLeverage): a refused change (59107) must not refuse a
// close or an order that only reduces.
func (v *Venue) ensureLeverage(ctx context.Context, instID string, lever int) (string, error) {
	cur, err := v.leverage(ctx, instID)
	if err != nil {
		return "", err
	}
	if cur == lever {
		return "", nil
	}
	body := map[string]string{"instId": instID, "lever": strconv.Itoa(lever), "mgnMode": "cross"}
	err = v.do(ctx, request{method: http.MethodPost, path: "/api/v5/account/set-leverage", body: body, private: true, instID: instID}, nil)
	if e, ok := errors.AsType[*APIError](err); ok && (e.Refused() || answeredUntabled(e)) {
		return "set leverage " + strconv.Itoa(lever) + ": " + e.Msg, nil
	}
	if err != nil {
		return "", fmt.Errorf("okx: set leverage %d on %s: %w", lever, instID, asUnreachable(err))
	}
	return "", nil
}

// answeredUntabled reports whether e is OKX's own answer (a code, with a
// status below 500) of a code ErrorTable does not list: a request OKX
// refused for a reason hoox does not know.
func answeredUntabled(e *APIError) bool {
	return e.Class == ClassUnknown && e.Code != 0 && e.HTTPStatus < 500 &&
		venuekit.ClassOf(ErrorTable(), e.Code, "") == ""
}
