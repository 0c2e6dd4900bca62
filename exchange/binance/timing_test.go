package binance_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
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
	for _, m := range markets {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			b := setup(t, m)
			ctx := context.Background()
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
}

// TestPreCallsPastRecvWindowAreRefusedAndNotRetried: when the reads before
// the order outlast recvWindow, Binance refuses the order unexecuted
// (-1021). Place answers ErrUnreachable and sends it once: a second send
// with a fresh timestamp would stretch the order's validity past the
// window the gateway waits out.
func TestPreCallsPastRecvWindowAreRefusedAndNotRetried(t *testing.T) {
	t.Parallel()
	for _, m := range markets {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			b := setup(t, m)
			ctx := context.Background()
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
}

// TestMatchingEngineRecvWindow: Binance checks the timestamp again before
// the matching engine takes the order; an order that expired on the way is
// refused unexecuted (spot -1021, futures -5028): nothing placed, server
// time resynced, 503 for the sender — never a rejection that uses the
// signal up.
func TestMatchingEngineRecvWindow(t *testing.T) {
	t.Parallel()
	for _, m := range markets {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			b := setup(t, m)
			ctx := context.Background()
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
