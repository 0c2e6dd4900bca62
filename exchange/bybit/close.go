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
)

// closeOrder resolves a close action to a side and size from the venue:
// linear reads the one-way position, spot the free base-coin balance. A
// non-empty reason refuses the close for good.
func (v *Venue) resolveClose(ctx context.Context, o exchange.Order, f filters) (side string, qty decimal.Decimal, reason string, err error) {
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
		return "sell", free, "", nil
	}
	var res struct {
		List []struct {
			Symbol      string `json:"symbol"`
			Side        string `json:"side"`
			Size        string `json:"size"`
			PositionIdx int    `json:"positionIdx"`
		} `json:"list"`
	}
	q := url.Values{"category": {string(MarketLinear)}, "symbol": {f.symbol}}
	if err := v.do(ctx, request{method: http.MethodGet, path: "/v5/position/list", query: q, private: true}, &res); err != nil {
		return "", decimal.Zero, "", fmt.Errorf("read position %s: %w", f.symbol, asUnreachable(err))
	}
	for _, p := range res.List {
		size := dec(p.Size)
		if p.Symbol != f.symbol || p.PositionIdx != 0 || !size.IsPositive() {
			continue
		}
		switch {
		case p.Side == "Buy" && o.Action != "close_short":
			return "sell", size, "", nil
		case p.Side == "Sell" && o.Action != "close_long":
			return "buy", size, "", nil
		}
	}
	return "", decimal.Zero, ReasonNoPosition, nil
}

// freeBalance is what the unified account can sell of coin: the wallet
// balance less what open orders lock and what was borrowed.
func (v *Venue) freeBalance(ctx context.Context, coin string) (decimal.Decimal, error) {
	var res struct {
		List []struct {
			Coin []struct {
				Coin          string `json:"coin"`
				WalletBalance string `json:"walletBalance"`
				Locked        string `json:"locked"`
				SpotBorrow    string `json:"spotBorrow"`
			} `json:"coin"`
		} `json:"list"`
	}
	q := url.Values{"accountType": {"UNIFIED"}, "coin": {coin}}
	if err := v.do(ctx, request{method: http.MethodGet, path: "/v5/account/wallet-balance", query: q, private: true}, &res); err != nil {
		return decimal.Zero, fmt.Errorf("read balance %s: %w", coin, asUnreachable(err))
	}
	free := decimal.Zero
	for _, acct := range res.List {
		for _, c := range acct.Coin {
			if c.Coin == coin {
				free = free.Add(dec(c.WalletBalance).Sub(dec(c.Locked)).Sub(dec(c.SpotBorrow)))
			}
		}
	}
	return free, nil
}

// ensureLeverage sets symbol's leverage unless the cache says it already
// is: Bybit applies leverage per symbol, so it must be right before the
// order. 110043 ("leverage not modified") means it already was. A refusal
// returns its reason; any other failure means nothing was placed.
func (v *Venue) ensureLeverage(ctx context.Context, sym string, lev int) (reason string, err error) {
	v.mu.Lock()
	cur, ok := v.leverage[sym]
	v.mu.Unlock()
	if ok && cur == lev {
		return "", nil
	}
	l := strconv.Itoa(lev)
	body := map[string]string{"category": string(MarketLinear), "symbol": sym, "buyLeverage": l, "sellLeverage": l}
	err = v.do(ctx, request{method: http.MethodPost, path: "/v5/position/set-leverage", body: body, private: true}, nil)
	var e *APIError
	switch {
	case err == nil, errors.As(err, &e) && e.Code == 110043:
	case e != nil && e.Refused():
		return "set leverage " + l + ": " + e.Msg, nil
	default:
		return "", fmt.Errorf("set leverage %s %s: %w", sym, l, asUnreachable(err))
	}
	v.mu.Lock()
	v.leverage[sym] = lev
	v.mu.Unlock()
	return "", nil
}
