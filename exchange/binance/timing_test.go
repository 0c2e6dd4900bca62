package binance_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
)

// stampBound is how far after Place's start the order's timestamp may be:
// the server-time offset's rounding, never the pre-calls' duration.
const stampBound = 50 * time.Millisecond

// TestOrderStampedWhenPlaceStarts: the gateway counts the accept window
// from just before Place, so the order's timestamp (and with it the end of
// its recvWindow) is fixed when Place starts, however long the reads before
// the order take (exchangeInfo, leverage, positionRisk, account, ticker).
func TestOrderStampedWhenPlaceStarts(t *testing.T) {
	t.Parallel()
	eachMarket(t, func(t *testing.T, ctx context.Context, b *testBundle, m binance.Market) {
		prefix := "/api/v3"
		if m == binance.MarketFutures {
			prefix = "/fapi/v1"
			b.fake.SetLatency("/fapi/v1/leverage", time.Second)
			b.fake.SetLatency("/fapi/v2/positionRisk", time.Second)
		} else {
			b.fake.SetLatency("/api/v3/account", time.Second)
		}
		b.fake.SetLatency(prefix+"/exchangeInfo", 2*time.Second)
		b.fake.SetLatency(prefix+"/ticker/price", 500*time.Millisecond)

		for _, o := range []exchange.Order{marketOrder("buy", "0.01"), closeOrder("close")} {
			o.Leverage = 3
			start := b.clock.Now()
			r, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
			log := b.fake.RequestLog(b.path)
			sent := log[len(log)-1]
			require.False(t, sent.Timestamp.IsZero())
			require.GreaterOrEqual(t, sent.At.Sub(start), time.Second, "the reads before the order took time")
			require.WithinRange(t, sent.Timestamp, start.Add(-stampBound), start.Add(stampBound),
				"order stamped %s after Place started", sent.Timestamp.Sub(start))
			require.Equal(t, 5*time.Second, sent.RecvWindow)
		}
	})
}

// TestPreCallsPastRecvWindowAreRefusedAndNotRetried: when the reads before
// the order outlast recvWindow, Binance refuses the order unexecuted
// (-1021). Place answers ErrUnreachable and sends it once: a second send
// with a fresh timestamp would stretch the order's validity past the
// window the gateway waits out.
func TestPreCallsPastRecvWindowAreRefusedAndNotRetried(t *testing.T) {
	t.Parallel()
	eachMarket(t, func(t *testing.T, ctx context.Context, b *testBundle, m binance.Market) {
		info := "/api/v3/exchangeInfo"
		if m == binance.MarketFutures {
			info = "/fapi/v1/exchangeInfo"
		}
		b.fake.SetLatency(info, 6*time.Second)
		o := marketOrder("buy", "0.01")
		_, err := b.venue.Place(ctx, o)
		require.ErrorIs(t, err, exchange.ErrUnreachable)
		require.NotErrorIs(t, err, exchange.ErrUnknownOutcome)
		require.ErrorContains(t, err, "-1021")
		require.Len(t, b.fake.RequestLog(b.path), 1, "sent once, not again with a fresh timestamp")
		require.Equal(t, 0, b.fake.Placements(o.ClientOrderID))

		// Filters are cached now: the sender's retry goes through.
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
	})
}

// TestMatchingEngineRecvWindow: Binance checks the timestamp again before
// the matching engine takes the order; an order that expired on the way is
// refused unexecuted (spot -1021, futures -5028): nothing placed, server
// time resynced, 503 for the sender — never a rejection that uses the
// signal up.
func TestMatchingEngineRecvWindow(t *testing.T) {
	t.Parallel()
	eachMarket(t, func(t *testing.T, ctx context.Context, b *testBundle, m binance.Market) {
		_, err := b.venue.Place(ctx, marketOrder("buy", "0.01"))
		require.NoError(t, err)
		syncs := b.fake.Requests(b.path[:len(b.path)-len("order")] + "time")

		b.fake.SetMatchingDelay(6 * time.Second)
		o := marketOrder("buy", "0.01")
		_, err = b.venue.Place(ctx, o)
		require.ErrorIs(t, err, exchange.ErrUnreachable)
		require.NotErrorIs(t, err, exchange.ErrCredentials)
		if m == binance.MarketFutures {
			require.ErrorContains(t, err, "-5028")
		} else {
			require.ErrorContains(t, err, "-1021")
		}
		require.Equal(t, 0, b.fake.Placements(o.ClientOrderID))
		require.Len(t, b.fake.RequestLog(b.path), 2, "not sent again")
		require.Equal(t, syncs+1, b.fake.Requests(b.path[:len(b.path)-len("order")]+"time"), "server time resynced")

		b.fake.SetMatchingDelay(0)
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
	})
}

// TestWeightWaitPastRecvWindowSendsNothing: an order that would have to
// wait for the next minute's request weight longer than its recvWindow
// would reach Binance expired; it is not sent (ErrUnreachable) instead of
// waiting for a sure -1021.
func TestWeightWaitPastRecvWindowSendsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, binance.MarketSpot, func(c *binance.Config) {
		c.WeightBudget = 1000
		c.RecvWindow = time.Second
	})
	ctx := context.Background()
	_, err := b.venue.Place(ctx, marketOrder("buy", "0.01"))
	require.NoError(t, err)
	// 12:00:58: the next minute is 2 s away, past the 1 s recvWindow.
	b.clock.Advance(48 * time.Second)
	b.fake.SetUsedWeight(1000)
	_, err = b.venue.Lookup(ctx, marketOrder("buy", "0.01")) // reads the header
	require.ErrorIs(t, err, exchange.ErrNotFound)

	sent := b.fake.Requests(b.path)
	o := marketOrder("buy", "0.01")
	_, err = b.venue.Place(ctx, o)
	require.ErrorIs(t, err, exchange.ErrUnreachable)
	require.ErrorContains(t, err, "recvWindow")
	require.Equal(t, sent, b.fake.Requests(b.path), "nothing sent")
	require.Equal(t, 0, b.fake.Placements(o.ClientOrderID))
}

// TestLateInTheMatchingEngine: the recvWindow checks end before the
// matching engine (spot CHANGELOG.md 2025-08-12: the check "does not cover
// potential delays inside the Matching Engine itself"), so a spot order
// the API took can appear in the book after its accept window has closed:
// "not found" then proves nothing, and the venue says so
// (RefusesLateRequests false). USDⓈ-M futures checks the timestamp again
// in the matching engine and refuses a late order unexecuted (-5028, change
// log 2023-04-17): "not found" after the accept window is final there.
func TestLateInTheMatchingEngine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, m := range markets {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			b := setup(t, m)
			_, err := b.venue.Place(ctx, marketOrder("buy", "0.01")) // time and filters cached
			require.NoError(t, err)

			late := b.venue.AcceptWindow() + 10*time.Second
			b.fake.Inject(binancefake.Fault{Kind: binancefake.FaultLateInEngine, Delay: late})
			o := marketOrder("buy", "0.01")
			_, err = b.venue.Place(ctx, o)
			require.ErrorIs(t, err, exchange.ErrUnknownOutcome)
			require.ErrorContains(t, err, "-1007")

			// The accept window closes with nothing to find.
			b.clock.Advance(b.venue.AcceptWindow())
			_, err = b.venue.Lookup(ctx, o)
			require.ErrorIs(t, err, exchange.ErrNotFound)

			// Then the matching engine reaches the order.
			b.clock.Advance(late - b.venue.AcceptWindow())
			require.Zero(t, b.fake.PendingInEngine())
			r, err := b.venue.Lookup(ctx, o)
			if m == binance.MarketSpot {
				require.False(t, exchange.RefusesLate(b.venue), "spot cannot prove a missing order will never exist")
				require.NoError(t, err, "spot books the order after its accept window")
				require.Equal(t, exchange.StatusFilled, r.Status)
				require.Equal(t, 1, b.fake.Placements(o.ClientOrderID))
				return
			}
			require.True(t, exchange.RefusesLate(b.venue))
			require.ErrorIs(t, err, exchange.ErrNotFound, "futures refused it in the matching engine")
			require.Equal(t, 1, b.fake.LateRefused())
			require.Equal(t, 0, b.fake.Placements(o.ClientOrderID))
		})
	}

	t.Run("futures/WithinRecvWindowIsBooked", func(t *testing.T) {
		t.Parallel()
		b := setup(t, binance.MarketFutures)
		b.fake.Inject(binancefake.Fault{Kind: binancefake.FaultLateInEngine, Delay: 2 * time.Second})
		o := marketOrder("buy", "0.01")
		_, err := b.venue.Place(ctx, o)
		require.ErrorIs(t, err, exchange.ErrUnknownOutcome)
		b.clock.Advance(2 * time.Second)
		r, err := b.venue.Lookup(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.Zero(t, b.fake.LateRefused())
	})
}
