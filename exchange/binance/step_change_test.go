package binance_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
)

// ethWithStep is the default ETHUSDT with another LOT_SIZE step (and
// minimum), as when Binance coarsens a symbol's step size while orders
// rest: the resting orders stay as they are (filters.md defines filters
// as trading rules, checked when an order is placed; nothing in the docs
// amends resting orders).
func ethWithStep(step string) binancefake.Symbol {
	for _, s := range binancefake.DefaultSymbols() {
		if s.Symbol == "ETHUSDT" {
			s.StepSize, s.MinQty = d(step), d(step)
			return s
		}
	}
	panic("no ETHUSDT")
}

// A lone spot exit that rests while Binance changes the symbol's LOT_SIZE
// step is still the order hoox placed under its client order ID: the
// lookup finds it open. Re-rounding the leg's quantity with the current
// step would call the exit hoox placed itself a mismatch.
func TestSpotLoneExitIsFoundAfterAStepSizeChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, role := range []string{exchange.RoleTakeProfit, exchange.RoleStopLoss} {
		t.Run(role, func(t *testing.T) {
			t.Parallel()
			b := setup(t, binance.MarketSpot)
			b.fake.SetBalance("ETH", d("1"))
			target := price("3300")
			if role == exchange.RoleStopLoss {
				target = price("2700")
			}
			o := loneExit(newID(), role, target)
			// What a 1 ETH buy received net of a 0.1 % fee charged in
			// ETH, on the 0.01 step.
			o.Quantity = d("0.99")
			r, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)

			// Binance coarsens ETHUSDT's step; the exit keeps resting.
			b.fake.SetSymbol(ethWithStep("0.1"))
			// The cached filters age out (FilterTTL), or a replica
			// restarts.
			b.clock.Advance(2 * binance.DefaultFilterTTL)

			found, err := b.venue.Lookup(ctx, o)
			require.NoError(t, err, "the exit hoox placed, still resting, is not a mismatch")
			require.Equal(t, exchange.StatusOpen, found.Status)
			require.Equal(t, r.ExchangeOrderID, found.ExchangeOrderID)

			// Another quantity under the ID is still not this exit.
			other := o
			other.Quantity = d("1.2")
			_, err = b.venue.Lookup(ctx, other)
			require.ErrorIs(t, err, exchange.ErrMismatch)
		})
	}
}

// The same for a resting limit entry whose signal quantity was not on the
// step (sent rounded down): after Binance coarsens the step, re-rounding
// the signal's quantity with the new step would call the entry hoox placed
// a mismatch, so the follow job could no longer read its fills and the
// entry's exits would never be placed.
func TestSpotLimitEntryIsFoundAfterAStepSizeChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketSpot)
	o := limitOrder("buy", "1.234", "2900")
	o.Symbol = "ETHUSDT"
	r, err := b.venue.Place(ctx, o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)
	require.Equal(t, "1.23", r.Quantity.String())

	b.fake.SetSymbol(ethWithStep("0.1"))
	b.clock.Advance(2 * binance.DefaultFilterTTL)

	found, err := b.venue.Lookup(ctx, o)
	require.NoError(t, err, "the entry hoox placed, still resting, is not a mismatch")
	require.Equal(t, exchange.StatusOpen, found.Status)
	require.Equal(t, r.ExchangeOrderID, found.ExchangeOrderID)
}

// A USDⓈ-M exit (an algo order) that rests while Binance coarsens the
// symbol's step is still found as the exit hoox placed.
func TestFuturesExitIsFoundAfterAStepSizeChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketFutures)
	b.fake.SetPosition("ETHUSDT", d("0.99"))
	o := exchange.Order{ClientOrderID: newID(), Symbol: "ETHUSDT", Action: "close", Side: "sell", ReduceOnly: true,
		OrderType: "market", Quantity: d("0.99"), Exit: exchange.RoleStopLoss}
	sl := price("2700")
	o.StopLoss = &sl
	r, err := b.venue.Place(ctx, o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)

	b.fake.SetSymbol(ethWithStep("0.1"))
	b.clock.Advance(2 * binance.DefaultFilterTTL)

	found, err := b.venue.Lookup(ctx, o)
	require.NoError(t, err, "the exit hoox placed, still resting, is not a mismatch")
	require.Equal(t, exchange.StatusOpen, found.Status)
	require.Equal(t, r.ExchangeOrderID, found.ExchangeOrderID)
}
