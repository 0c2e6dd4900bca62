package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/internal/pgtest"
)

// ledgerOf reads what strategy holds of symbol on exchange (live), "0"
// when it has no entry.
func ledgerOf(t *testing.T, b *adaptersBundle, exchange, symbol, strategy string) string {
	t.Helper()
	var q decimal.Decimal
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT coalesce((SELECT quantity FROM spot_ledger
		WHERE exchange = $1 AND mode = 'live' AND symbol = $2 AND strategy = $3), 0)`, exchange, symbol, strategy).Scan(&q))
	return q.String()
}

func spotSignal(action, quantity, strategy, key string) string {
	return fmt.Sprintf(`{"exchange":"binance","symbol":"BTCUSDT","action":%q,"quantity":%q,"strategy":%q,"trace_id":%q}`,
		action, quantity, strategy, key)
}

// A spot close sells what the strategy bought through hoox — net of the
// commission Binance took in BTC, rounded down to the lot step — and
// never the coins the account held before, nor what another strategy
// bought. The audit event says why that size: the ledger and the free
// balance read.
func TestSpotCloseSellsWhatTheStrategyBought(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	b.binance.SetBalance("BTC", decimal.RequireFromString("1")) // held before hoox
	b.binance.SetSpotCommission(decimal.RequireFromString("0.001"))

	_, err := b.svc.Execute(ctx, input(t, spotSignal("buy", "0.010", "trend", "buy-trend")))
	require.NoError(t, err)
	_, err = b.svc.Execute(ctx, input(t, spotSignal("buy", "0.020", "", "buy-none")))
	require.NoError(t, err)
	require.Equal(t, "0.00999", ledgerOf(t, b, "binance", "BTCUSDT", "trend"), "0.010 bought, 0.1 %% taken in BTC")
	require.Equal(t, "0.01998", ledgerOf(t, b, "binance", "BTCUSDT", ""))

	out, err := b.svc.Execute(ctx, input(t, spotSignal("close", "1", "trend", "close-trend")))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Equal(t, "sell", out.Order.Side)
	require.Equal(t, "0.009", out.Order.Quantity.String(), "0.00999 rounded down to the 0.001 step, not the 1.02997 BTC free")
	require.Equal(t, "0.009", b.venueQuantities("binance")[out.Order.ClientOrderID].String())
	require.Equal(t, "0.00099", ledgerOf(t, b, "binance", "BTCUSDT", "trend"), "the dust below the step stays the strategy's")
	require.Equal(t, "0.01998", ledgerOf(t, b, "binance", "BTCUSDT", ""), "another strategy's holding is untouched")

	var ledger, free, position string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT detail->'sizing'->>'ledger', detail->'sizing'->>'free_base', detail->'sizing'->>'position'
		FROM trace_history WHERE trace_id = 'k:close-trend' AND event = 'dispatched'`).Scan(&ledger, &free, &position))
	require.Equal(t, "0.00999", ledger)
	require.Equal(t, "1.02997", free)
	require.Equal(t, "0.00999", position)
}

// A strategy that holds nothing through hoox (or only dust below the lot
// step) gets a clear 422 and nothing reaches the venue, whatever the
// account holds.
func TestSpotCloseOfNothingHeldIsRefusedBeforeAnythingIsSent(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	b.binance.SetBalance("BTC", decimal.RequireFromString("5"))

	_, err := b.svc.Execute(ctx, input(t, spotSignal("close", "1", "never-bought", "close-nothing")))
	var gerr *gateway.Error
	require.True(t, errors.As(err, &gerr), "%v", err)
	require.Equal(t, codes.OrderRejected, gerr.Code)
	require.Contains(t, gerr.Detail, "holds 0 BTC through hoox")
	require.Empty(t, b.binance.Orders(), "nothing was sent")
	require.Equal(t, "5", b.binance.Balance("BTC").String())

	var reason string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT detail->>'reason' FROM trace_history
		WHERE trace_id = 'k:close-nothing' AND event = 'rejected'`).Scan(&reason))
	require.Contains(t, reason, "nothing to sell")
}

// percent_of_position on spot takes its share of what the strategy holds
// through hoox (bounded by the free balance), not of the whole balance.
func TestSpotPercentOfPositionIsAShareOfTheLedger(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	b.binance.SetSpotCommission(decimal.Zero) // no fee: the ledger's arithmetic is under test
	ctx := context.Background()
	b.binance.SetBalance("BTC", decimal.RequireFromString("2"))
	_, err := b.svc.Execute(ctx, input(t, spotSignal("buy", "0.100", "swing", "buy-swing")))
	require.NoError(t, err)

	out, err := b.svc.Execute(ctx, input(t,
		`{"exchange":"binance","symbol":"BTCUSDT","action":"close","quantity":"50","quantity_type":"percent_of_position","strategy":"swing","trace_id":"half-swing"}`))
	require.NoError(t, err)
	require.Equal(t, "0.05", out.Order.Quantity.String(), "half of 0.1, not of 2.1")
	require.Equal(t, "0.05", ledgerOf(t, b, "binance", "BTCUSDT", "swing"))
}

// Derivatives closes are unchanged: they close the venue's position, and
// nothing enters the spot ledger.
func TestDerivativesOrdersStayOutOfTheSpotLedger(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	_, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"BTCUSDT","action":"long","quantity":"0.010","strategy":"perp","trace_id":"perp-long"}`))
	require.NoError(t, err)
	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"BTCUSDT","action":"close","quantity":"1","strategy":"perp","trace_id":"perp-close"}`))
	require.NoError(t, err)
	require.Equal(t, "0.01", out.Order.Quantity.String(), "the whole position")
	require.Equal(t, 0, count(t, b.pool, `SELECT count(*) FROM spot_ledger`))
}

// Two signals of one strategy recorded at once both count: the trigger's
// upsert takes the ledger row's lock, so neither buy's fill is lost.
func TestConcurrentBuysOfOneStrategyAllCount(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	b.binance.SetSpotCommission(decimal.Zero) // no fee: the ledger's arithmetic is under test
	ctx := context.Background()
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.svc.Execute(ctx, input(t, spotSignal("buy", "0.010", "grid", fmt.Sprintf("grid-%d", i))))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, "0.08", ledgerOf(t, b, "binance", "BTCUSDT", "grid"))
}

// Bybit spot charges a buy's fee in the base coin: the ledger counts what
// arrived, and the close sells exactly that.
func TestBybitSpotCloseSellsWhatTheStrategyBought(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	b.bybit.SetBalance("BTC", decimal.RequireFromString("3"))
	b.bybit.SetSpotFeeRate(decimal.RequireFromString("0.001"))
	_, err := b.svc.Execute(ctx, input(t, `{"exchange":"bybit-spot","symbol":"BTCUSDT","action":"buy","quantity":"0.01","strategy":"mean-rev","trace_id":"bb-buy"}`))
	require.NoError(t, err)
	require.Equal(t, "0.00999", ledgerOf(t, b, "bybit-spot", "BTCUSDT", "mean-rev"))

	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"bybit-spot","symbol":"BTCUSDT","action":"close","quantity":"1","strategy":"mean-rev","trace_id":"bb-close"}`))
	require.NoError(t, err)
	require.Equal(t, "0.00999", out.Order.Quantity.String(), "what the strategy received, not the 3.00999 BTC free")
	require.Equal(t, "0", ledgerOf(t, b, "bybit-spot", "BTCUSDT", "mean-rev"))
	require.Equal(t, "3", b.bybit.Balance("BTC").WalletBalance.String(), "the coins held before hoox are still there")
}

// Closes of one strategy's holding sent at once sell it once: the second
// reads the ledger only after the first's fill is recorded, and finds
// nothing left — although the account holds plenty of coins it never
// bought.
func TestConcurrentSpotClosesSellTheHoldingOnce(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	b.binance.SetSpotCommission(decimal.Zero) // no fee: the ledger's arithmetic is under test
	ctx := context.Background()
	b.binance.SetBalance("BTC", decimal.RequireFromString("5"))
	_, err := b.svc.Execute(ctx, input(t, spotSignal("buy", "0.010", "scalp", "scalp-buy")))
	require.NoError(t, err)
	// A slow placement keeps each close in flight long enough for the
	// others to size theirs meanwhile, were nothing to stop them.
	b.binance.SetLatency("/api/v3/order", 150*time.Millisecond)

	const n = 4
	var wg sync.WaitGroup
	outcomes := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.svc.Execute(ctx, input(t, spotSignal("close", "1", "scalp", fmt.Sprintf("scalp-close-%d", i))))
			outcomes <- err
		}()
	}
	wg.Wait()
	close(outcomes)
	placed := 0
	for err := range outcomes {
		if err == nil {
			placed++
			continue
		}
		var gerr *gateway.Error
		require.True(t, errors.As(err, &gerr), "%v", err)
		require.Equal(t, codes.OrderRejected, gerr.Code, gerr.Detail)
	}
	require.Equal(t, 1, placed, "one close sold the holding; the others found nothing left")
	sold := decimal.Zero
	for _, o := range b.binance.Orders() {
		if o.Side == "SELL" {
			sold = sold.Add(o.ExecutedQty)
		}
	}
	require.Equal(t, "0.01", sold.String())
	require.Equal(t, "5", b.binance.Balance("BTC").String())
	require.Equal(t, "0", ledgerOf(t, b, "binance", "BTCUSDT", "scalp"))
}

// A close whose answer was lost may have sold the holding although no fill
// is recorded yet: a second close counts that sell as done, and sells
// nothing of the coins the strategy never bought.
func TestSpotCloseCountsUnrecordedSellsAsSold(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	b.binance.SetSpotCommission(decimal.Zero) // no fee: the ledger's arithmetic is under test
	ctx := context.Background()
	b.binance.SetBalance("BTC", decimal.RequireFromString("5"))
	_, err := b.svc.Execute(ctx, input(t, spotSignal("buy", "0.010", "swing", "swing-buy")))
	require.NoError(t, err)

	b.binance.Inject(binancefake.Fault{Kind: binancefake.FaultUnknownAfterAccept})
	_, err = b.svc.Execute(ctx, input(t, spotSignal("close", "1", "swing", "swing-close-lost")))
	var gerr *gateway.Error
	require.True(t, errors.As(err, &gerr), "%v", err)
	require.Equal(t, codes.Unavailable, gerr.Code, "no reconciler runs here: the claim rolls back, its intent stays open")
	require.Equal(t, "5", b.binance.Balance("BTC").String(), "the venue sold the holding")
	require.Equal(t, "0.01", ledgerOf(t, b, "binance", "BTCUSDT", "swing"), "no fill recorded yet")

	_, err = b.svc.Execute(ctx, input(t, spotSignal("close", "1", "swing", "swing-close-again")))
	require.True(t, errors.As(err, &gerr), "%v", err)
	require.Equal(t, codes.OrderRejected, gerr.Code, gerr.Detail)
	require.Contains(t, gerr.Detail, "not recorded yet")
	require.Equal(t, "5", b.binance.Balance("BTC").String(), "nothing more sold")
}

// The ledger is per account: a named account (its own keys, here its own
// fake) on the same venue keeps its own entry, as the trace and order
// rows record it, and its close sells only what was bought there.
func TestSpotLedgerIsPerAccount(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, url)
	spotOn := func(f *binancefake.Server) exchange.Venue {
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		v, err := binance.New(binance.Config{Market: binance.MarketSpot, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL,
			HTTPClient: &http.Client{Transport: tr}})
		require.NoError(t, err)
		return v
	}
	main, sub := binancefake.New(t, binancefake.Options{}), binancefake.New(t, binancefake.Options{})
	main.SetSpotCommission(decimal.Zero) // no fee: the ledger's arithmetic is under test
	sub.SetSpotCommission(decimal.Zero)
	reg := exchange.NewRegistryOf(
		exchange.Entry{Name: "binance", Live: spotOn(main)},
		exchange.Entry{Name: "sub1", Venue: "binance", Live: spotOn(sub)},
	)
	svc := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: pool, MarkerPool: pgtest.OpenPool(t, url), Venues: reg})
	t.Cleanup(svc.Close)
	ctx := context.Background()
	send := func(account, action, qty, key string) (*gateway.Outcome, error) {
		return svc.Execute(ctx, input(t, fmt.Sprintf(`{"exchange":%q,"symbol":"BTCUSDT","action":%q,"quantity":%q,"strategy":"grid","trace_id":%q}`,
			account, action, qty, key)))
	}
	held := func(account string) string {
		var q decimal.Decimal
		require.NoError(t, pool.QueryRow(ctx, `SELECT coalesce((SELECT quantity FROM spot_ledger WHERE exchange = $1 AND strategy = 'grid'), 0)`,
			account).Scan(&q))
		return q.String()
	}
	_, err := send("binance", "buy", "0.010", "acct-buy-main")
	require.NoError(t, err)
	_, err = send("sub1", "buy", "0.030", "acct-buy-sub")
	require.NoError(t, err)
	require.Equal(t, "0.01", held("binance"))
	require.Equal(t, "0.03", held("sub1"))

	out, err := send("sub1", "close", "1", "acct-close-sub")
	require.NoError(t, err)
	require.Equal(t, "0.03", out.Order.Quantity.String())
	require.Equal(t, "0", held("sub1"))
	require.Equal(t, "0.01", held("binance"), "the default account's holding is its own")
	require.Equal(t, "0.01", main.Balance("BTC").String())
}
