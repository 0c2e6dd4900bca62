package gateway_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/pgtest"
)

// A window-mode spot close (percent_of_position) whose execution 0 died
// between the venue's fill and the commit. The next window's execution 1
// claims, recovers execution 0 in its claim transaction (recoverEarlier:
// the adopted sell goes through the spot ledger's trigger, which takes the
// spot_ledger row's lock in the claim's transaction), sizes its own close
// from the ledger, and writes its intent through writeSpotCloseIntentSQL
// on the marker pool — which SELECTs that same row FOR UPDATE from another
// session. It waits on its own claim's row lock until the 5 s lock_timeout,
// answers 503 "the database is unavailable", rolls back (the recovery with
// it), and every retry does the same until the sweeper adopts execution 0.
func TestWindowSpotCloseAfterRecoveringEarlierExecutionIsNotRefused(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	pool, markers := pgtest.OpenPool(t, url), pgtest.OpenPool(t, url)
	fake := binancefake.New(t, binancefake.Options{})
	fake.SetSpotCommission(decimal.Zero)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	v, err := binance.New(binance.Config{Market: binance.MarketSpot, APIKey: fake.APIKey(), APISecret: fake.APISecret(),
		BaseURL: fake.URL, HTTPClient: &http.Client{Transport: tr}})
	require.NoError(t, err)
	const window = 400 * time.Millisecond
	cfg := gateway.DefaultConfig()
	cfg.DedupWindow = window
	svc := gateway.New(cfg, gateway.Deps{Pool: pool, MarkerPool: markers, Jobs: &jobRecorder{},
		Venues: exchange.NewRegistry(map[string]exchange.Venue{"binance": v}), AfterVenue: crashOn(2)})
	t.Cleanup(svc.Close)
	ctx := context.Background()

	// The strategy buys 2 ETH (attempt 1: not crashed).
	_, err = svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"2","strategy":"half","trace_id":"rr-buy"}`))
	require.NoError(t, err)

	closeHalf := `{"exchange":"binance","symbol":"ETHUSDT","action":"close","quantity":"50","quantity_type":"percent_of_position","strategy":"half"}`
	// Execution 0 (attempt 2): the venue sells 1 ETH, the replica dies
	// before the commit.
	executeCrashing(t, svc, input(t, closeHalf))

	time.Sleep(window + 100*time.Millisecond)
	// Execution 1, the next window: it recovers execution 0 and sells half
	// of what is left.
	start := time.Now()
	out, err := svc.Execute(ctx, input(t, closeHalf))
	require.NoError(t, err, "execution 1 refused after %s: its intent write waited on the spot_ledger row its own claim locked while recovering execution 0", time.Since(start).Round(time.Millisecond))
	require.Equal(t, "0.5", out.Order.Quantity.String())
}

// A close of 100 % of the position (TradersPost's "exit 100%", sized as
// percent_of_position) flattens it, yet binance.flattens reads any Sizing
// as "leaves some open": on -2022 behind the position's own take-profit it
// is now refused with ReasonPartialCloseBlocked ("... or close the whole
// position") instead of cancelling the take-profit and closing, as before
// this round. The trader asked to exit everything; the position stays
// open.
func TestHundredPercentCloseBehindATakeProfitCloses(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	d := decimal.RequireFromString
	b.binance.SetPosition("ETHUSDT", d("10"))
	venue, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: b.binance.APIKey(), APISecret: b.binance.APISecret(), BaseURL: b.binance.URL})
	require.NoError(t, err)
	r, err := venue.Place(ctx, exchange.Order{ClientOrderID: "manual-tp-100", Symbol: "ETHUSDT", Action: "sell", Side: "sell", ReduceOnly: true,
		OrderType: "limit", Quantity: d("10"), Price: decimal.NewNullDecimal(d("4000"))})
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)

	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"100%","trace_id":"exit-all"}`))
	require.NoError(t, err, "a close of 100%% of the position was refused; the position is still %s", b.binance.Position("ETHUSDT"))
	require.Equal(t, db.TraceDispatched, out.Status)
	require.True(t, b.binance.Position("ETHUSDT").IsZero(), "position %s", b.binance.Position("ETHUSDT"))
}
