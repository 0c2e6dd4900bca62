package binance

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
)

// resolveClose turns a close, close_long or close_short into the market
// order that flattens what the account holds: on futures a reduce-only
// order for all of positionAmt (one-way mode), on spot a sell of the free
// base-asset balance. The signal's quantity is not used: the venue's
// position is the truth. reason is set when there is nothing to close.
func (v *Venue) resolveClose(ctx context.Context, o exchange.Order, f Filters, out outgoing) (outgoing, string, error) {
	out.market = true
	if v.futures() {
		amt, err := v.position(ctx, out.symbol)
		if err != nil {
			return out, "", err
		}
		switch {
		case amt.IsPositive() && o.Action != "close_short":
			out.side = "sell"
		case amt.IsNegative() && o.Action != "close_long":
			out.side = "buy"
		default:
			return out, ReasonNoPosition, nil
		}
		out.qty, out.reduceOnly = amt.Abs(), true
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
	if f.RoundQuantity(free, true).IsZero() {
		return out, ReasonNoPosition, nil
	}
	return out, "", nil
}

// position is the futures position on symbol, signed (short < 0). In
// one-way mode Binance reports one entry with positionSide BOTH; entries
// for hedge mode's LONG and SHORT are summed, which is their net.
func (v *Venue) position(ctx context.Context, symbol string) (decimal.Decimal, error) {
	var risks []struct {
		Symbol      string          `json:"symbol"`
		PositionAmt decimal.Decimal `json:"positionAmt"`
	}
	req := request{method: http.MethodGet, path: "/fapi/v2/positionRisk", params: params{}.add("symbol", symbol), signed: true, weight: 5}
	if err := v.do(ctx, req, &risks); err != nil {
		return decimal.Zero, fmt.Errorf("binance: position for %s: %w", symbol, err)
	}
	var amt decimal.Decimal
	for _, r := range risks {
		if r.Symbol == symbol {
			amt = amt.Add(r.PositionAmt)
		}
	}
	return amt, nil
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

// ensureLeverage sets symbol's leverage on futures when it differs from the
// last value this venue set; spot has no leverage and ignores it. The cache
// is per process: a restart sets each symbol's leverage once more.
func (v *Venue) ensureLeverage(ctx context.Context, symbol string, leverage int) error {
	if !v.futures() {
		return nil
	}
	v.mu.Lock()
	cur := v.leverage[symbol]
	v.mu.Unlock()
	if cur == leverage {
		return nil
	}
	var r struct {
		Leverage int `json:"leverage"`
	}
	p := params{}.add("symbol", symbol).add("leverage", strconv.Itoa(leverage))
	req := request{method: http.MethodPost, path: v.prefix + "/leverage", params: p, signed: true, weight: 1}
	if err := v.do(ctx, req, &r); err != nil {
		return fmt.Errorf("binance: set leverage %d on %s: %w", leverage, symbol, err)
	}
	v.mu.Lock()
	v.leverage[symbol] = r.Leverage
	v.mu.Unlock()
	return nil
}
