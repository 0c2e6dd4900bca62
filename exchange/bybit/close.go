package bybit

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

// resolveClose resolves a close action to a side and size from the venue:
// linear the one-way position pos (read by prepare), spot the free
// base-coin balance. A non-empty reason refuses the close for good: there
// is nothing to close, or a close planned on a side (a split close's part,
// a percent_of_position exit) would now have to go the other way
// (venuekit.KeepsPlannedSide).
func (v *Venue) resolveClose(ctx context.Context, o exchange.Order, f filters, pos position) (side string, qty decimal.Decimal, reason string, err error) {
	side, qty, reason, err = v.closeSide(ctx, o, f, pos)
	if err == nil && reason == "" && !venuekit.KeepsPlannedSide(o, side) {
		return "", decimal.Zero, ReasonNoPosition, nil
	}
	return side, qty, reason, err
}

// closeSide is the side and size that reduce what the account holds now.
func (v *Venue) closeSide(ctx context.Context, o exchange.Order, f filters, pos position) (side string, qty decimal.Decimal, reason string, err error) {
	if v.cfg.Market == MarketSpot {
		if o.Action == "close_short" {
			return "", decimal.Zero, ReasonSpotCloseShort, nil
		}
		free, err := v.freeBalance(ctx, f.baseCoin)
		if err != nil {
			return "", decimal.Zero, "", err
		}
		if !free.IsPositive() {
			return "", decimal.Zero, ReasonNoPosition, nil
		}
		return "sell", partialQty(o, free), "", nil
	}
	if pos.size.IsPositive() {
		switch {
		case pos.side == "Buy" && o.Action != "close_short":
			return "sell", partialQty(o, pos.size), "", nil
		case pos.side == "Sell" && o.Action != "close_long":
			return "buy", partialQty(o, pos.size), "", nil
		}
	}
	return "", decimal.Zero, ReasonNoPosition, nil
}

// position is what Bybit's position list says about a linear symbol.
type position struct {
	// side is Buy or Sell ("" when flat), size the position's size.
	side string
	size decimal.Decimal
	// leverage is the symbol's leverage at Bybit now (0 if not listed),
	// as listed: Bybit takes fractional leverages (leverageFilter
	// leverageStep 0.01), which a change in its app may have set.
	leverage decimal.Decimal
	// trailing is the one-way position's trailing stop distance (zero:
	// none; position.mdx, trailingStop).
	trailing decimal.Decimal
	// hedge is true when the account holds the symbol in hedge mode:
	// positions listed with positionIdx 1 (Buy side) and 2 (Sell side).
	hedge bool
}

// signed is the position's size, negative for a short (Sell).
func (p position) signed() decimal.Decimal {
	if p.side == "Sell" {
		return p.size.Neg()
	}
	return p.size
}

// readPosition reads the linear position on symbol: its size, the
// leverage Bybit holds for it (never a cached value: another replica or a
// manual change may have set it) and the position mode, in one request.
func (v *Venue) readPosition(ctx context.Context, symbol string) (position, error) {
	var res struct {
		List []struct {
			Symbol      string `json:"symbol"`
			Side        string `json:"side"`
			Size        string `json:"size"`
			Leverage    string `json:"leverage"`
			PositionIdx int    `json:"positionIdx"`
			// TrailingStop is "0.00" (or "") when none is set.
			TrailingStop string `json:"trailingStop"`
		} `json:"list"`
	}
	q := url.Values{"category": {string(MarketLinear)}, "symbol": {symbol}}
	if err := v.do(ctx, request{method: http.MethodGet, path: "/v5/position/list", query: q, private: true}, &res); err != nil {
		return position{}, fmt.Errorf("read position %s: %w", symbol, asUnreachable(err))
	}
	var p position
	for _, e := range res.List {
		if e.Symbol != symbol {
			continue
		}
		if e.PositionIdx != 0 {
			p.hedge = true
			continue
		}
		if l, err := decimal.NewFromString(e.Leverage); err == nil {
			p.leverage = l
		}
		if size := dec(e.Size); size.IsPositive() {
			p.side, p.size, p.trailing = e.Side, size, dec(e.TrailingStop)
		}
	}
	return p, nil
}

// freeBalance is what the unified account can sell of coin (spot's base
// coin, for a close): the wallet balance less what open spot orders lock
// and what was borrowed.
func (v *Venue) freeBalance(ctx context.Context, coin string) (decimal.Decimal, error) {
	accts, err := v.readWallet(ctx, coin)
	if err != nil {
		return decimal.Zero, err
	}
	free := decimal.Zero
	for _, acct := range accts {
		for _, c := range acct.Coin {
			if c.Coin == coin {
				free = free.Add(dec(c.WalletBalance).Sub(dec(c.Locked)).Sub(dec(c.SpotBorrow)))
			}
		}
	}
	return free, nil
}

// ensureLeverage sets symbol's leverage unless Bybit already holds it
// (cur, read just before from the position list): Bybit applies leverage
// per symbol, so it must be right before the order. 110043 ("leverage not
// modified") means it already was. A refusal (any code Bybit answered
// that is not tabled as a transient failure) returns its reason; any other
// failure means nothing was placed. It is called only for an order that
// opens or adds to a position (venuekit.SetsLeverage): a refused change
// (110013) must not refuse a close or an order that only reduces.
func (v *Venue) ensureLeverage(ctx context.Context, sym string, cur decimal.Decimal, lev int) (reason string, err error) {
	// Compared as listed, never truncated: 10.5 is not the 10 asked for.
	if cur.Equal(decimal.NewFromInt(int64(lev))) {
		return "", nil
	}
	l := strconv.Itoa(lev)
	body := map[string]string{"category": string(MarketLinear), "symbol": sym, "buyLeverage": l, "sellLeverage": l}
	err = v.do(ctx, request{method: http.MethodPost, path: "/v5/position/set-leverage", body: body, private: true}, nil)
	var e *APIError
	switch {
	case err == nil, errors.As(err, &e) && e.Code == 110043:
	case e != nil && (e.Refused() || (e.HTTPStatus == http.StatusOK && e.Code != 0 && !tabled(e.Code))):
		// A code Bybit answered (HTTP 200) that hoox does not table: an
		// order's unlisted code may mean it exists, but set-leverage places
		// nothing, so an answered refusal of it is a refusal (110038,
		// portfolio margin, is one), not an unreachable venue for ever. A
		// tabled transient code (10000, 10016: Bybit restarting) stays
		// unreachable: nothing was placed, resend.
		return "set leverage " + l + ": " + e.Msg, nil
	default:
		return "", fmt.Errorf("set leverage %s %s: %w", sym, l, asUnreachable(err))
	}
	return "", nil
}
