package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/jobs"
)

// splitCloseWithALegLeftToTheSweeper closes a long of 250 ETH on
// binance-futures, split 100+100+50: the first part fills, the first
// leg's send is refused with a 429 before anything is accepted, so the
// legs stay planned for the sweeper. It returns the fake, the pool and the
// registry the sweeper needs.
func splitCloseWithALegLeftToTheSweeper(t *testing.T, trace string) (*binancefake.Server, *pgxpool.Pool, *exchange.Registry) {
	t.Helper()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	pool, marker := pgtest.OpenPool(t, url), pgtest.OpenPool(t, url)
	fake := binancefake.New(t, binancefake.Options{})
	bigETH(fake)
	fake.SetPosition("ETHUSDT", decimal.RequireFromString("250"))
	venue, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: fake.APIKey(), APISecret: fake.APISecret(), BaseURL: fake.URL})
	require.NoError(t, err)
	reg := exchange.NewRegistryOf(exchange.Entry{Name: "binance-futures", Live: venue})
	first := true
	svc := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: pool, MarkerPool: marker, Venues: reg,
		AfterVenue: func(string) {
			if first {
				first = false
				fake.Inject(binancefake.Fault{Kind: binancefake.FaultRateLimit, Count: 1})
			}
		}})
	t.Cleanup(svc.Close)

	out, err := svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"1","trace_id":"`+trace+`"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Equal(t, "150", fake.Position("ETHUSDT").String(), "the first part sold 100 of the long")
	require.Equal(t, 2, count(t, pool, `SELECT count(*) FROM order_legs WHERE trace_id = 'k:`+trace+`' AND outcome IS NULL
		AND order_spec->>'Side' = 'sell'`), "two sell parts still planned")
	return fake, pool, reg
}

// sweepLegs runs the sweeper until every leg of trace has an outcome.
func sweepLegs(t *testing.T, pool *pgxpool.Pool, reg *exchange.Registry, trace string) {
	t.Helper()
	ctx := context.Background()
	sweeper := jobs.NewSweepWorker(pool, jobs.Config{SweepGrace: time.Millisecond}, reg, nil, nil)
	require.Eventually(t, func() bool {
		_, err := sweeper.Sweep(ctx)
		require.NoError(t, err)
		return count(t, pool, `SELECT count(*) FROM order_legs WHERE trace_id = 'k:`+trace+`' AND outcome IS NULL`) == 0
	}, 20*time.Second, 50*time.Millisecond)
}

// The parts of a long's split close are sells. If, before the sweeper
// sends the rest, the position turns short (the strategy's own reversal,
// another strategy, a manual trade), the rest is refused as having no
// position to close: a part sent as a reduce-only BUY would close the
// short, which the close was never meant to touch.
func TestSplitCloseOfALongLeavesAShortOpenedMeanwhileAlone(t *testing.T) {
	t.Parallel()
	fake, pool, reg := splitCloseWithALegLeftToTheSweeper(t, "split-flip")
	fake.SetPosition("ETHUSDT", decimal.RequireFromString("-60"))

	sweepLegs(t, pool, reg, "split-flip")
	for _, o := range fake.Orders() {
		require.NotEqual(t, "BUY", o.Side, "part %s of the long's close was sent as a BUY of %s and closed the short", o.ClientOrderID, o.Quantity)
	}
	require.Equal(t, "-60", fake.Position("ETHUSDT").String(), "the short position is not this close's business")
	require.Equal(t, 2, count(t, pool, `SELECT count(*) FROM order_legs WHERE trace_id = 'k:split-flip' AND outcome = 'rejected'`),
		"both parts left are refused, nothing sent")
}

// The same flip, with the answer to whatever the sweeper sends lost:
// every order at the venue is one hoox recorded. (A part sent as a BUY
// would not match its stored plan, a sell, on lookup: the leg would end
// key_reused and the BUY that closed the short would never be recorded.)
func TestSplitCloseAfterAFlipLeavesNoUnrecordedOrderAtTheVenue(t *testing.T) {
	t.Parallel()
	fake, pool, reg := splitCloseWithALegLeftToTheSweeper(t, "split-lost")
	fake.SetPosition("ETHUSDT", decimal.RequireFromString("-60"))
	time.Sleep(1100 * time.Millisecond) // the adapter's pause after the 429
	fake.Inject(binancefake.Fault{Kind: binancefake.FaultServerErrorAfterAccept, Count: 1})

	sweepLegs(t, pool, reg, "split-lost")
	outcomes := []string{}
	rows, err := pool.Query(context.Background(), `SELECT seq || ':' || outcome FROM order_legs WHERE trace_id = 'k:split-lost' ORDER BY seq`)
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		outcomes = append(outcomes, s)
	}
	require.NoError(t, rows.Err())
	for _, o := range fake.Orders() {
		require.Equal(t, 1, count(t, pool, `SELECT count(*) FROM orders WHERE client_order_id = '`+o.ClientOrderID+`'`),
			"%s %s %s is at the venue but hoox never recorded it (legs: %v)", o.ClientOrderID, o.Side, o.Quantity, outcomes)
	}
	require.Equal(t, "-60", fake.Position("ETHUSDT").String())
}

// A 30 % close on Binance USDⓈ-M behind a take-profit for the whole
// position is refused by Binance (-2022: the resting reduce-only orders
// already cover the position). Cancelling them, as a close of the whole
// position does, would leave the 70 % it keeps open without its
// take-profit: the partial close is refused instead (422, with why) and
// the take-profit stays.
func TestPartialCloseKeepsTheTakeProfitOfTheRest(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	d := decimal.RequireFromString
	b.binance.SetPosition("ETHUSDT", d("10"))
	venue, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: b.binance.APIKey(), APISecret: b.binance.APISecret(), BaseURL: b.binance.URL})
	require.NoError(t, err)
	r, err := venue.Place(ctx, exchange.Order{ClientOrderID: "manual-tp", Symbol: "ETHUSDT", Action: "sell", Side: "sell", ReduceOnly: true,
		OrderType: "limit", Quantity: d("10"), Price: decimal.NewNullDecimal(d("4000"))})
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)

	_, err = b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"30%","trace_id":"partial-2022"}`))
	var ge *gateway.Error
	require.ErrorAs(t, err, &ge)
	require.Equal(t, codes.OrderRejected, ge.Code)
	require.Contains(t, ge.Detail, "ReduceOnly Order is rejected.")
	require.Contains(t, ge.Detail, binance.ReasonPartialCloseBlocked)
	require.Zero(t, b.binance.Cancels(), "nothing cancelled")
	for _, o := range b.binance.Orders() {
		if o.ClientOrderID == "manual-tp" {
			require.Equal(t, "NEW", o.Status, "the 30 %% close cancelled the take-profit of the 7 ETH it leaves open")
		}
	}
	require.Equal(t, "10", b.binance.Position("ETHUSDT").String())
}
