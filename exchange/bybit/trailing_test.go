package bybit_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
)

// trailingExit is the trailing stop leg of a long BTCUSDT entry, its
// distance resolved.
func trailingExit(distance string) exchange.Order {
	o := resolveClose("BTCUSDT", "close")
	o.Side, o.Quantity, o.Exit = "sell", d("0.01"), exchange.RoleTrailingStop
	o.TrailingStop = &exchange.Attached{Distance: decimal.NewNullDecimal(d(distance))}
	return o
}

// A trailing stop leg is the position's trailingStop: Place sets it (one
// trading-stop request, tpslMode Full, no activePrice), a second Place of
// the same distance is Bybit's 34040 "not modified" and reports the
// setting held, Lookup finds it by the distance the position holds, and
// tells apart a distance set since (mismatch, not adopted), a position
// without one (not found) and a closed position (expired: final). Cancel
// sets 0, but leaves another distance alone.
func TestTrailingStopIsThePositionsSetting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, bybit.MarketLinear)
	o := trailingExit("600")

	_, err := b.venue.Place(ctx, o)
	require.ErrorContains(t, err, "zero position", "no position (yet): not a refusal for good, the leg runner looks again")

	b.fake.SetPosition("BTCUSDT", "Buy", d("0.01"))
	r, err := b.venue.Place(ctx, o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status)
	require.Equal(t, "600", r.TrailingDistance.Decimal.String())
	require.Equal(t, "600", b.fake.TrailingStop("BTCUSDT").String())
	// The fake takes only tpslMode Full and refuses an activePrice.
	require.Equal(t, 2, b.fake.Requests(bybitfake.PathTradingStop))
	require.Equal(t, 1, b.fake.TrailingStopSets("BTCUSDT"))

	r, err = b.venue.Place(ctx, trailingExit("600.05"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusRejected, r.Status, "off the tick, on an open position: refused for good")

	r, err = b.venue.Place(ctx, o)
	require.NoError(t, err, "the same distance again is 34040, answered by reading the position")
	require.Equal(t, exchange.StatusOpen, r.Status)
	require.Equal(t, 1, b.fake.TrailingStopSets("BTCUSDT"))

	r, err = b.venue.Lookup(ctx, o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status)
	_, err = b.venue.Lookup(ctx, trailingExit("500"))
	require.ErrorIs(t, err, exchange.ErrMismatch,
		"another distance is not this leg's, and the position cannot say whether a later leg replaced it or it was never applied")
	require.ErrorContains(t, err, "trails by 600, not 500")

	r, err = b.venue.Cancel(ctx, trailingExit("500"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusExpired, r.Status, "not this leg's to cancel")
	require.Equal(t, "600", b.fake.TrailingStop("BTCUSDT").String(), "left alone")
	r, err = b.venue.Cancel(ctx, o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusCancelled, r.Status)
	require.True(t, b.fake.TrailingStop("BTCUSDT").IsZero())
	_, err = b.venue.Lookup(ctx, o)
	require.ErrorIs(t, err, exchange.ErrNotFound, "an open position without a trailing stop")

	b.fake.SetPosition("BTCUSDT", "", decimal.Zero)
	r, err = b.venue.Lookup(ctx, o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusExpired, r.Status, "gone with its position: final")
	require.Equal(t, bybit.ReasonPositionClosed, r.Reason)

	b.fake.SetPosition("BTCUSDT", "Sell", d("0.01"))
	r, err = b.venue.Lookup(ctx, o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusExpired, r.Status, "a short now: the long it protected closed")
	sent := b.fake.Requests(bybitfake.PathTradingStop)
	r, err = b.venue.Place(ctx, o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusRejected, r.Status, "a long's trailing stop is not set on a short")
	require.Contains(t, r.Reason, "is a Sell")
	require.Equal(t, sent, b.fake.Requests(bybitfake.PathTradingStop), "nothing sent")
	require.True(t, b.fake.TrailingStop("BTCUSDT").IsZero())
}

// An entry that still carries a trailing stop is refused before anything
// is sent: Bybit would place it without one.
func TestEntryCarryingATrailingStopIsNeverSent(t *testing.T) {
	t.Parallel()
	b := setup(t, bybit.MarketLinear)
	o := marketOrder("BTCUSDT", "buy", "0.01")
	o.TrailingStop = &exchange.Attached{Distance: decimal.NewNullDecimal(d("600"))}
	r, err := b.venue.Place(context.Background(), o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusRejected, r.Status)
	require.Zero(t, b.fake.Requests(bybitfake.PathCreate))
}
