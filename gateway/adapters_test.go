package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/exchange/okx"
	"github.com/hoox/hoox/exchange/okx/okxfake"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/pgtest"
)

// adaptersBundle is the gateway with the real venue adapters, each against
// its fake: binance has a testnet account (a second fake, with its own key
// pair), the others have none, so their test signals go to paper.
type adaptersBundle struct {
	pool           *pgxpool.Pool
	svc            *gateway.Service
	binance        *binancefake.Server // live spot and futures
	binanceTestnet *binancefake.Server // binance's testnet account
	bybit          *bybitfake.Server   // linear and spot
	okx            *okxfake.Server     // spot and swaps
	venues         *exchange.Registry
}

func setupAdapters(t *testing.T) *adaptersBundle {
	t.Helper()
	url := pgtest.NewDatabase(t)
	open := func() *pgxpool.Pool { return pgtest.OpenPool(t, url) }
	b := &adaptersBundle{
		pool:           open(),
		binance:        binancefake.New(t, binancefake.Options{}),
		binanceTestnet: binancefake.New(t, binancefake.Options{APIKey: "testnet-key", APISecret: "testnet-secret"}),
		bybit:          bybitfake.New(t, bybitfake.Options{}),
		okx:            okxfake.New(t, okxfake.Options{}),
	}
	client := func() *http.Client {
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr}
	}
	binanceAt := func(m binance.Market, f *binancefake.Server) exchange.Venue {
		v, err := binance.New(binance.Config{Market: m, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL, HTTPClient: client()})
		require.NoError(t, err)
		return v
	}
	bybitIn := func(c bybit.Market) exchange.Venue {
		v, err := bybit.New(bybit.Config{Market: c, APIKey: bybitfake.DefaultAPIKey, APISecret: bybitfake.DefaultAPISecret,
			BaseURL: b.bybit.URL, HTTPClient: client()})
		require.NoError(t, err)
		return v
	}
	okxIn := func(m okx.Market) exchange.Venue {
		v, err := okx.New(okx.Config{Market: m, APIKey: b.okx.APIKey(), APISecret: b.okx.APISecret(), Passphrase: b.okx.Passphrase(),
			BaseURL: b.okx.URL, HTTPClient: client()})
		require.NoError(t, err)
		return v
	}
	reg := exchange.NewRegistryOf(
		exchange.Entry{Name: exchange.PaperName, Live: paper.New(paper.Config{Pool: open()})},
		exchange.Entry{Name: "binance", Live: binanceAt(binance.MarketSpot, b.binance), Test: binanceAt(binance.MarketSpot, b.binanceTestnet)},
		exchange.Entry{Name: "binance-futures", Live: binanceAt(binance.MarketFutures, b.binance)},
		exchange.Entry{Name: "bybit", Live: bybitIn(bybit.MarketLinear)},
		exchange.Entry{Name: "bybit-spot", Live: bybitIn(bybit.MarketSpot)},
		exchange.Entry{Name: "okx", Live: okxIn(okx.MarketSpot)},
		exchange.Entry{Name: "okx-swap", Live: okxIn(okx.MarketSwap)},
	)
	b.venues = reg
	b.svc = gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: b.pool, MarkerPool: open(), Venues: reg})
	t.Cleanup(b.svc.Close)
	return b
}

// venueQuantities returns what each fake holds, by client order ID, for the
// market or category an exchange name trades on.
func (b *adaptersBundle) venueQuantities(exchangeName string) map[string]decimal.Decimal {
	out := map[string]decimal.Decimal{}
	switch exchangeName {
	case "binance", "binance-futures":
		market := binancefake.MarketSpot
		if exchangeName == "binance-futures" {
			market = binancefake.MarketFutures
		}
		for _, o := range b.binance.Orders() {
			if o.Market == market {
				out[o.ClientOrderID] = o.Quantity
			}
		}
	case "bybit", "bybit-spot":
		category := bybitfake.CategoryLinear
		if exchangeName == "bybit-spot" {
			category = bybitfake.CategorySpot
		}
		for _, o := range b.bybit.Orders() {
			if o.Category == category {
				out[o.OrderLinkID] = o.Qty
			}
		}
	}
	return out
}

// A quantity finer than the symbol's step is sent rounded down. The order
// row says what the venue holds; the signal's own quantity stays in the
// trace and in the audit event, so an operator can see both.
func TestQuantityRoundedToTheVenueStepIsWhatTheOrderRowStores(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	tests := []struct {
		exchange, asked, sent string
	}{
		{"binance", "0.0105", "0.010"},          // LOT_SIZE stepSize 0.001
		{"binance-futures", "0.0105", "0.010"},  // stepSize 0.001
		{"bybit", "0.0105", "0.010"},            // qtyStep 0.001
		{"bybit-spot", "0.0012345", "0.001234"}, // basePrecision 0.000001
	}
	for _, tt := range tests {
		t.Run(tt.exchange, func(t *testing.T) {
			t.Parallel()
			key := "round-" + tt.exchange
			out, err := b.svc.Execute(ctx, input(t, fmt.Sprintf(
				`{"exchange":%q,"symbol":"BTCUSDT","action":"buy","quantity":%q,"trace_id":%q}`, tt.exchange, tt.asked, key)))
			require.NoError(t, err)
			sent := decimal.RequireFromString(tt.sent)

			held := b.venueQuantities(tt.exchange)
			require.Len(t, held, 1)
			require.True(t, sent.Equal(held[out.Order.ClientOrderID]), "the venue holds %s, not %s", held[out.Order.ClientOrderID], sent)
			require.True(t, sent.Equal(out.Order.Quantity), "the answer reports %s", out.Order.Quantity)

			var rowQty decimal.Decimal
			var signalQty, eventQty string
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT quantity FROM orders WHERE trace_id = $1`, "k:"+key).Scan(&rowQty))
			require.True(t, sent.Equal(rowQty), "orders.quantity is %s, not what was sent (%s)", rowQty, sent)
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT signal->>'quantity' FROM trace_ids WHERE trace_id = $1`, "k:"+key).Scan(&signalQty))
			require.Equal(t, tt.asked, signalQty, "the trace keeps what was asked")
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT coalesce(detail->>'asked_quantity', '') FROM trace_history
				WHERE trace_id = $1 AND event = 'dispatched'`, "k:"+key).Scan(&eventQty))
			require.Equal(t, tt.asked, eventQty, "the dispatched event holds what was asked")
		})
	}
}

// A market order that meets too little liquidity fills in part and
// expires: the order row says what was sent and, apart, what executed —
// the position an operator must reckon with.
func TestPartialMarketFillRecordsWhatExecuted(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	b.binance.SetMarketLiquidity("BTCUSDT", decimal.RequireFromString("0.004"))
	b.bybit.SetMarketLiquidity(bybitfake.CategoryLinear, "BTCUSDT", decimal.RequireFromString("0.004"))
	for _, name := range []string{"binance", "bybit"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			key := "partial-" + name
			out, err := b.svc.Execute(ctx, input(t, fmt.Sprintf(
				`{"exchange":%q,"symbol":"BTCUSDT","action":"buy","quantity":"0.010","trace_id":%q}`, name, key)))
			require.NoError(t, err)
			require.Equal(t, db.TraceDispatched, out.Status, "something executed: the position moved")
			require.True(t, out.Order.FilledQuantity.Valid)
			require.Equal(t, "0.004", out.Order.FilledQuantity.Decimal.String())
			var sent, filled decimal.Decimal
			var status string
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT quantity, filled_quantity, status FROM orders WHERE trace_id = $1`, "k:"+key).
				Scan(&sent, &filled, &status))
			require.Equal(t, "0.01", sent.String())
			require.Equal(t, "0.004", filled.String())
			require.Equal(t, "filled", status)
		})
	}
}

// A test signal trades on the venue's testnet account when one is
// configured, else on paper; it never reaches the live account.
func TestTestSignalsGoToTheTestnetAccountElsePaper(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	signal := func(exchange, key string, test bool) string {
		return fmt.Sprintf(`{"exchange":%q,"symbol":"BTCUSDT","action":"buy","quantity":"0.01","trace_id":%q,"test":%t}`, exchange, key, test)
	}
	mode := func(traceID string) string {
		var m string
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT mode FROM orders WHERE trace_id = $1`, traceID).Scan(&m))
		return m
	}

	t.Run("BinanceTestSignalOnTheTestnetAccount", func(t *testing.T) {
		out, err := b.svc.Execute(ctx, input(t, signal("binance", "tn-1", true)))
		require.NoError(t, err)
		require.Equal(t, "test:k:tn-1", out.TraceID)
		require.Len(t, b.binanceTestnet.Orders(), 1)
		require.Equal(t, out.Order.ClientOrderID, b.binanceTestnet.Orders()[0].ClientOrderID)
		require.Empty(t, b.binance.Orders(), "nothing on the live account")
		require.Equal(t, "test", mode(out.TraceID))
	})

	t.Run("BinanceLiveSignalOnTheLiveAccount", func(t *testing.T) {
		out, err := b.svc.Execute(ctx, input(t, signal("binance", "tn-1", false)))
		require.NoError(t, err, "the same key live is another trace")
		require.Equal(t, "k:tn-1", out.TraceID)
		require.Len(t, b.binance.Orders(), 1)
		require.Equal(t, out.Order.ClientOrderID, b.binance.Orders()[0].ClientOrderID)
		require.Len(t, b.binanceTestnet.Orders(), 1, "nothing more on the testnet account")
		require.Equal(t, "live", mode(out.TraceID))
	})

	t.Run("WithoutTestnetAccountOnPaper", func(t *testing.T) {
		for _, name := range []string{"binance-futures", "bybit", "bybit-spot"} {
			out, err := b.svc.Execute(ctx, input(t, signal(name, "paper-"+name, true)))
			require.NoError(t, err)
			require.Equal(t, "test", mode(out.TraceID))
			var onPaper int
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM paper_orders WHERE client_order_id = $1`,
				out.Order.ClientOrderID).Scan(&onPaper))
			require.Equal(t, 1, onPaper, "%s: the test order is on paper", name)
			require.Empty(t, b.venueQuantities(name), "%s: nothing on the live account", name)
		}
	})
}
