package bybit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
)

// stampBound is how far after Place's start the order's X-BAPI-TIMESTAMP may
// be: the server-time offset's rounding, never the pre-calls' duration.
const stampBound = 50 * time.Millisecond

// TestOrderStampedWhenPlaceStarts: the gateway counts the accept window
// from just before Place, so the create request's X-BAPI-TIMESTAMP (and
// with it the end of its recv_window) is fixed when Place starts, however
// long the reads before it take (instruments-info, tickers, position,
// wallet balance, set-leverage).
func TestOrderStampedWhenPlaceStarts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eachCategory(t, func(t *testing.T, b *testBundle, c bybit.Market) {
		b.fake.SetLatency(bybitfake.PathInstruments, 2*time.Second)
		b.fake.SetLatency(bybitfake.PathTickers, 500*time.Millisecond)
		b.fake.SetLatency(bybitfake.PathLeverage, time.Second)
		b.fake.SetLatency(bybitfake.PathPositions, time.Second)
		b.fake.SetLatency(bybitfake.PathWallet, time.Second)
		b.fake.SetBalance("BTC", d("1"))
		b.fake.SetPosition("BTCUSDT", "Buy", d("0.5"))

		for _, o := range []exchange.Order{marketOrder("BTCUSDT", "buy", "0.01"), resolveClose("BTCUSDT", "close")} {
			o.Leverage = 3
			start := b.clock.Now()
			r, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
			log := b.fake.RequestLog(bybitfake.PathCreate)
			sent := log[len(log)-1]
			require.GreaterOrEqual(t, sent.At.Sub(start), time.Second, "the reads before the order took time")
			require.WithinRange(t, sent.Timestamp, start.Add(-stampBound), start.Add(stampBound),
				"order stamped %s after Place started", sent.Timestamp.Sub(start))
			require.Equal(t, 5*time.Second, sent.RecvWindow)
		}
	})
}

// TestPreCallsPastRecvWindowAreRefusedAndNotRetried: when the reads before
// the order outlast recv_window, Bybit refuses the order unexecuted
// (10002). Place answers ErrUnreachable and sends it once: a second send
// with a fresh timestamp would stretch the order's validity past the
// window the gateway waits out.
func TestPreCallsPastRecvWindowAreRefusedAndNotRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, bybit.MarketLinear)
	b.fake.SetLatency(bybitfake.PathInstruments, 6*time.Second)
	o := marketOrder("BTCUSDT", "buy", "0.01")
	_, err := b.venue.Place(ctx, o)
	require.ErrorIs(t, err, exchange.ErrUnreachable)
	require.NotErrorIs(t, err, exchange.ErrUnknownOutcome)
	require.ErrorContains(t, err, "10002")
	require.Len(t, b.fake.RequestLog(bybitfake.PathCreate), 1, "sent once, not again with a fresh timestamp")
	_, held := b.fake.Order(bybitfake.CategoryLinear, o.ClientOrderID)
	require.False(t, held)

	// Filters are cached now: the sender's retry goes through.
	r, err := b.venue.Place(ctx, o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status)
}
