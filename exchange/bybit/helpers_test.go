package bybit_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/internal/testutil"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type testBundle struct {
	fake  *bybitfake.Server
	venue *bybit.Venue
	clock *testutil.Clock
	logs  *testutil.LogBuffer
	cfg   bybit.Config
}

// setup starts a fake and an adapter for category on one test clock; mods
// adjust the adapter's config before it is built.
func setup(t *testing.T, category bybit.Market, mods ...func(*bybit.Config)) *testBundle {
	t.Helper()
	clock := testutil.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	// A slow endpoint (SetLatency) moves the shared clock, not the wall
	// clock: both sides see the time pass, and the test does not wait.
	fake := bybitfake.New(t, bybitfake.Options{Now: clock.Now, Sleep: clock.Advance})
	logger, logs := testutil.TextLogs()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	cfg := bybit.Config{
		Market:     category,
		APIKey:     bybitfake.DefaultAPIKey,
		APISecret:  bybitfake.DefaultAPISecret,
		BaseURL:    fake.URL,
		HTTPClient: &http.Client{Transport: tr},
		Now:        clock.Now,
		Logger:     logger,
	}
	for _, m := range mods {
		m(&cfg)
	}
	v, err := bybit.New(cfg)
	require.NoError(t, err)
	return &testBundle{fake: fake, venue: v, clock: clock, logs: logs, cfg: cfg}
}

var idSeq atomic.Int64

// clientID returns a client order ID in hoox's shape: "hx" + 30 characters.
func clientID() string {
	n := fmt.Sprint(idSeq.Add(1))
	return "hx" + strings.Repeat("a", 30-len(n)) + n
}

func d(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func marketOrder(symbol, side, qty string) exchange.Order {
	action := side
	return exchange.Order{
		ClientOrderID: clientID(), Symbol: symbol, Action: action, Side: side,
		OrderType: "market", Quantity: d(qty),
	}
}

func limitOrder(symbol, side, qty, price string) exchange.Order {
	o := marketOrder(symbol, side, qty)
	o.OrderType, o.Price = "limit", decimal.NewNullDecimal(d(price))
	return o
}

func resolveClose(symbol, action string) exchange.Order {
	return exchange.Order{
		ClientOrderID: clientID(), Symbol: symbol, Action: action, ReduceOnly: true,
		OrderType: "market", Quantity: d("1"),
	}
}

// eachCategory runs test on linear and spot in parallel, each on a fresh
// bundle.
func eachCategory(t *testing.T, test func(t *testing.T, b *testBundle, c bybit.Market)) {
	t.Helper()
	for _, c := range []bybit.Market{bybit.MarketLinear, bybit.MarketSpot} {
		t.Run(string(c), func(t *testing.T) {
			t.Parallel()
			test(t, setup(t, c), c)
		})
	}
}
