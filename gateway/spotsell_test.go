package gateway_test

import (
	"context"
	"errors"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/gateway"
)

// A spot sell spends the base coin, so percent_of_balance is a share of
// the free base balance (exchange.SpotSell): "sell 100%" with 10000 USDT
// and 0.05 BTC free at 50000 sells the 0.05 BTC held. Sized from the
// quote balance, as an entry is, it asked Binance to sell 0.2 BTC — four
// times every coin the account holds, or other strategies' coins when
// there are some — against README's "100 % never asks for more than the
// balance".
func TestSpotSellPercentOfBalanceNeverAsksMoreThanTheCoinHeld(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	b.binance.SetSpotCommission(decimal.Zero)
	b.binance.SetPrice("BTCUSDT", decimal.NewFromInt(50000))
	b.binance.SetBalance("USDT", decimal.NewFromInt(10000))
	b.binance.SetBalance("BTC", decimal.RequireFromString("0.05"))

	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"BTCUSDT","action":"sell","quantity":"100%",
		"strategy":"a","trace_id":"spot-sell-pct"}`))
	var asked decimal.Decimal
	var gerr *gateway.Error
	switch {
	case err == nil:
		asked = out.Order.Quantity
	case errors.As(err, &gerr) && gerr.Outcome != nil && gerr.Outcome.Order != nil:
		asked = gerr.Outcome.Order.Quantity
	}
	held := decimal.RequireFromString("0.05")
	require.Falsef(t, asked.GreaterThan(held),
		"spot sell of 100%% of the balance asked Binance to sell %s BTC while the account holds %s BTC (err %v)", asked, held, err)
	require.NoError(t, err)
	require.Equal(t, "0.05", out.Order.Quantity.String(), "100 % of the BTC held")
	require.True(t, b.binance.Balance("BTC").IsZero(), "the coin held is sold, and no more")
}
