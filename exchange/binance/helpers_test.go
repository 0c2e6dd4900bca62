package binance_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/internal/testutil"
)

type testBundle struct {
	fake  *binancefake.Server
	venue *binance.Venue
	clock *testutil.Clock
	logs  *testutil.LogBuffer
	cfg   binance.Config
	// path is the market's order endpoint on the fake.
	path string
}

var idSeq atomic.Int64

// newID returns a client order ID shaped like the gateway's: hx + 30
// base32 characters.
func newID() string {
	return fmt.Sprintf("hx%030d", idSeq.Add(1))
}

func setup(t *testing.T, market binance.Market, mutate ...func(*binance.Config)) *testBundle {
	t.Helper()
	clock := testutil.NewClock(time.Date(2025, 3, 1, 12, 0, 10, 0, time.UTC))
	// A slow endpoint (SetLatency) moves the shared clock, not the wall
	// clock: both sides see the time pass, and the test does not wait.
	fake := binancefake.New(t, binancefake.Options{Now: clock.Now, Sleep: clock.Advance})
	logger, logs := testutil.TextLogs()
	cfg := binance.Config{
		Market:    market,
		APIKey:    fake.APIKey(),
		APISecret: fake.APISecret(),
		BaseURL:   fake.URL,
		Now:       clock.Now,
		Logger:    logger,
	}
	for _, m := range mutate {
		m(&cfg)
	}
	v, err := binance.New(cfg)
	require.NoError(t, err)
	path := "/api/v3/order"
	if market == binance.MarketFutures {
		path = "/fapi/v1/order"
	}
	return &testBundle{fake: fake, venue: v, clock: clock, logs: logs, cfg: cfg, path: path}
}

func d(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func marketOrder(side, qty string) exchange.Order {
	return exchange.Order{
		ClientOrderID: newID(), Symbol: "BTCUSDT", Action: side, Side: side,
		OrderType: "market", Quantity: d(qty),
	}
}

func limitOrder(side, qty, price string) exchange.Order {
	o := marketOrder(side, qty)
	o.OrderType = "limit"
	o.Price = decimal.NewNullDecimal(d(price))
	return o
}

func closeOrder(action string) exchange.Order {
	return exchange.Order{
		ClientOrderID: newID(), Symbol: "BTCUSDT", Action: action, ReduceOnly: true,
		OrderType: "market", Quantity: d("1"),
	}
}

var markets = []binance.Market{binance.MarketSpot, binance.MarketFutures}

// eachMarket runs test on both markets in parallel, each on a fresh
// bundle.
func eachMarket(t *testing.T, test func(t *testing.T, ctx context.Context, b *testBundle, m binance.Market)) {
	t.Helper()
	for _, m := range markets {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			test(t, context.Background(), setup(t, m), m)
		})
	}
}

// requireAdopted requires the gateway's retry (exchange.PlaceOrAdopt) to
// adopt the order already at the venue, and returns its report.
func (b *testBundle) requireAdopted(t *testing.T, ctx context.Context, o exchange.Order, lookupFirst bool) exchange.Report {
	t.Helper()
	r, adopted, err := exchange.PlaceOrAdopt(ctx, b.venue, o, lookupFirst)
	require.NoError(t, err)
	require.True(t, adopted)
	return r
}

// requireUnknownOnce requires err to be an unknown outcome (never "nothing
// sent") for a placement the fake booked exactly once.
func (b *testBundle) requireUnknownOnce(t *testing.T, err error, o exchange.Order, msgAndArgs ...any) {
	t.Helper()
	require.ErrorIs(t, err, exchange.ErrUnknownOutcome, msgAndArgs...)
	require.NotErrorIs(t, err, exchange.ErrUnreachable)
	require.Equal(t, 1, b.fake.Placements(o.ClientOrderID))
}
