package gateway_test

import (
	"context"
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

// Binance spot counts an OCO list's STOP_LOSS against the symbol's
// MAX_NUM_ALGO_ORDERS (filters.md). With a cap of one, a first buy with a
// take-profit and a stop-loss is placed with its list; a second one is
// refused before anything is sent (422 order_rejected): the coins it would
// buy would otherwise sit without the list Binance then refuses.
func TestBinanceSpotEntryIsRefusedWhenTheAlgoCapHoldsNoRoomForItsOCO(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	b.binance.SetSpotCommission(decimal.Zero)
	b.binance.SetMaxNumAlgoOrders("ETHUSDT", 1)
	body := func(trace string) string {
		return `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1","take_profit":"3300","stop_loss":"2700","trace_id":"` + trace + `"}`
	}
	out, err := b.svc.Execute(ctx, input(t, body("spot-cap-1")))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Len(t, b.binance.OrderLists(), 1)
	require.Len(t, b.binance.Orders(), 1)

	_, err = b.svc.Execute(ctx, input(t, body("spot-cap-2")))
	var ge *gateway.Error
	require.ErrorAs(t, err, &ge)
	require.Equal(t, codes.OrderRejected, ge.Code)
	require.Contains(t, ge.Detail, "MAX_NUM_ALGO_ORDERS allows 1 open stop/take-profit orders on ETHUSDT and 1 are open")
	require.Len(t, b.binance.Orders(), 1, "the second buy was not sent")
	require.Len(t, b.binance.OrderLists(), 1)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:spot-cap-2' AND event = 'rejected'
		AND detail->'exit_caps'->0->>'open' = '1' AND detail->'exit_caps'->0->>'adds' = '1'`))
}

// Bybit keeps an entry's take-profit and stop-loss on the order (Partial
// mode) and caps them per symbol (error.mdx 110061): past the cap Bybit
// refuses the entry itself, so the answer is 422 order_rejected with
// Bybit's reason and no position opens without its exits — a refusal for
// good, not an outcome to reconcile.
func TestBybitEntryPastThePartialTPSLCapIsRefusedWhole(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	b.bybit.SetMaxPartialTPSL(2)
	body := func(trace string) string {
		return `{"exchange":"bybit","symbol":"BTCUSDT","action":"buy","quantity":"0.01","take_profit":"61200","stop_loss":"58800","trace_id":"` + trace + `"}`
	}
	out, err := b.svc.Execute(ctx, input(t, body("bybit-cap-1")))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)

	_, err = b.svc.Execute(ctx, input(t, body("bybit-cap-2")))
	var ge *gateway.Error
	require.ErrorAs(t, err, &ge)
	require.Equal(t, codes.OrderRejected, ge.Code)
	require.Contains(t, ge.Detail, "Not allowed to have more than 2 TP/SLs under Partial tpSlMode")
	require.Len(t, b.bybit.Orders(), 1, "the second entry was not booked")
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_ids WHERE trace_id = 'k:bybit-cap-2' AND status = 'rejected'`))
}

// A Binance spot stop-loss alone rests as a STOP_LOSS order, which the
// algo cap counts; a take-profit alone rests as a LIMIT_MAKER, which it
// does not. With a cap of one: a buy with a stop-loss is placed, a second
// one is refused before it is sent, and a buy with only a take-profit is
// still placed.
func TestBinanceSpotLoneExitsCountAgainstTheAlgoCapOnlyWhenTheyAreStops(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	b.binance.SetSpotCommission(decimal.Zero)
	b.binance.SetMaxNumAlgoOrders("ETHUSDT", 1)
	body := func(trace, exit string) string {
		return `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",` + exit + `,"trace_id":"` + trace + `"}`
	}
	out, err := b.svc.Execute(ctx, input(t, body("lone-sl-1", `"stop_loss":"2700"`)))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Len(t, b.binance.Orders(), 2, "the buy and its STOP_LOSS")

	_, err = b.svc.Execute(ctx, input(t, body("lone-sl-2", `"stop_loss":"2700"`)))
	var ge *gateway.Error
	require.ErrorAs(t, err, &ge)
	require.Equal(t, codes.OrderRejected, ge.Code)
	require.Contains(t, ge.Detail, "MAX_NUM_ALGO_ORDERS")
	require.Len(t, b.binance.Orders(), 2, "nothing sent")

	out, err = b.svc.Execute(ctx, input(t, body("lone-tp", `"take_profit":"3300"`)))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Len(t, b.binance.Orders(), 4, "the buy and its LIMIT_MAKER: a take-profit alone is not capped")
}

// Spot's MAX_NUM_ORDERS counts every open order, and an OCO list is two:
// with a cap of three and a resting limit sell plus one list open, a buy
// with a take-profit and a stop-loss is refused before it is sent, named
// by the filter that is full.
func TestBinanceSpotEntryIsRefusedWhenMaxNumOrdersHoldsNoRoomForItsList(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	b.binance.SetSpotCommission(decimal.Zero)
	b.binance.SetMaxNumOrders("ETHUSDT", 3)
	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1","take_profit":"3300","stop_loss":"2700","trace_id":"orders-1"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Len(t, b.binance.OrderLists(), 1)
	b.binance.SetBalance("ETH", decimal.NewFromInt(5))
	_, err = b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"sell","quantity":"1","order_type":"limit","price":"3500","trace_id":"orders-rest"}`))
	require.NoError(t, err)

	_, err = b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1","take_profit":"3300","stop_loss":"2700","trace_id":"orders-2"}`))
	var ge *gateway.Error
	require.ErrorAs(t, err, &ge)
	require.Equal(t, codes.OrderRejected, ge.Code)
	require.Contains(t, ge.Detail, "MAX_NUM_ORDERS allows 3 open orders on ETHUSDT and 3 are open")
	require.Len(t, b.binance.OrderLists(), 1, "no second list")
	require.Len(t, b.binance.Orders(), 2, "the first buy and the resting sell: the second buy was not sent")
}

// OKX caps the reduce-only orders on an instrument (51165). A trailing
// stop refused at that cap once the entry filled is a refusal for good:
// the leg is recorded rejected with OKX's reason and shown not_placed —
// not an unknown outcome left to look up and resend.
func TestOKXTrailingStopRefusedAtTheReduceOnlyCapIsRejected(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	b.okx.SetMaxReduceOnly(1)
	body := func(trace string) string {
		return `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"long","quantity":"0.01","trailing_stop":"2%","trace_id":"` + trace + `"}`
	}
	first, err := b.svc.Execute(ctx, input(t, body("okx-cap-1")))
	require.NoError(t, err)
	require.Len(t, first.Legs, 1)
	require.Equal(t, "open", first.Legs[0].Status)

	out, err := b.svc.Execute(ctx, input(t, body("okx-cap-2")))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status, "the entry executed")
	require.Len(t, out.Legs, 1, "the trailing stop is recorded, not left to the sweeper")
	require.Equal(t, "rejected", out.Legs[0].Status)
	require.Contains(t, *out.Legs[0].RejectReason, "reduce-only orders reached the upper limit of 1")
	require.Equal(t, db.AttachedNotPlaced, out.Legs[0].Attached()[0].Status)
	require.Len(t, b.okx.TrailingStops(), 1)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE trace_id = 'k:okx-cap-2' AND outcome = 'rejected'`))
}

// The cap is counted once, into the intent: hoox dies after Binance took
// the entry, the cap fills meanwhile, and the resend adopts the entry from
// the intent rather than counting again — a second count would refuse
// (422) a signal whose order Binance already holds, leaving it
// unrecorded. The exits then meet the full cap: recorded rejected.
func TestResendAfterACrashDoesNotCountTheCapAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	fake := binancefake.New(t, binancefake.Options{})
	fake.SetMaxNumAlgoOrders("BTCUSDT", 2)
	venue, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: fake.APIKey(), APISecret: fake.APISecret(), BaseURL: fake.URL})
	require.NoError(t, err)
	crashed := false
	svc := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: pgtest.OpenPool(t, url), MarkerPool: pgtest.OpenPool(t, url),
		Venues: exchange.NewRegistryOf(exchange.Entry{Name: "binance-futures", Live: venue}),
		AfterVenue: func(string) {
			if !crashed {
				crashed = true
				panic(crash{})
			}
		}})
	t.Cleanup(svc.Close)
	body := `{"exchange":"binance-futures","symbol":"BTCUSDT","action":"buy","quantity":"0.01","take_profit":"55000","stop_loss":"45000","trace_id":"cap-crash"}`
	require.PanicsWithValue(t, crash{}, func() { _, _ = svc.Execute(ctx, input(t, body)) })
	require.Len(t, fake.Orders(), 1, "Binance took the entry")
	pool := pgtest.OpenPool(t, url)
	require.Equal(t, 1, count(t, pool, `SELECT count(*) FROM dispatch_intents WHERE outcome IS NULL AND order_spec->'ExitCaps'->0->>'open' = '0'`),
		"the count read is in the open intent")

	fake.FillAlgoCap("BTCUSDT")
	out, err := svc.Execute(ctx, input(t, body))
	require.NoError(t, err, "the resend adopts the entry Binance holds")
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Len(t, fake.Orders(), 1, "no second entry")
	require.Equal(t, 1, count(t, pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:cap-crash' AND role = 'primary' AND status = 'filled'`))
	require.Equal(t, 2, count(t, pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:cap-crash' AND role <> 'primary' AND status = 'rejected'`),
		"the exits met the full cap")
}

// Binance USDⓈ-M no longer publishes MAX_NUM_ALGO_ORDERS per symbol: its
// conditional orders are capped at 200 across all symbols (derivatives
// change log, 2025-12-29), refused past it with -4045. An entry whose
// stop-loss would not fit under that account-wide cap is refused before
// anything is sent (422), rather than opening a long whose stop-loss
// Binance then refuses.
func TestBinanceFuturesEntryIsRefusedWhenTheAccountsConditionalOrderLimitIsReached(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	// A trader's stops on another symbol take every place the account has.
	b.binance.FillAccountAlgoCap("BTCUSDT")
	require.Len(t, b.binance.AlgoOrders(), binancefake.AccountAlgoOrderLimit)

	_, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"stop_loss":"2700","trace_id":"acct-cap-2"}`))
	var ge *gateway.Error
	require.ErrorAs(t, err, &ge, "the ETHUSDT long must not be opened when Binance will refuse its stop-loss")
	require.Equal(t, codes.OrderRejected, ge.Code)
	require.Contains(t, ge.Detail, "allows 200 open stop/take-profit orders on all symbols and 200 are open")
	require.True(t, b.binance.Position("ETHUSDT").IsZero(), "no ETHUSDT position opened without its stop-loss")
	require.Len(t, b.binance.AlgoOrders(), binancefake.AccountAlgoOrderLimit)
}

// A Binance USDⓈ-M entry with exits reads the position it adds to and
// the open conditional orders its exits count against. Neither read
// depends on the other, so hoox asks both at once: one venue round trip
// before the intent instead of two. The fake holds the position read
// until the open algo orders are asked (for a few seconds at most).
func TestBinanceFuturesEntryAsksThePositionAndTheOpenAlgoOrdersTogether(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	counts := b.binance.HoldUntilAsked("/fapi/v2/positionRisk", "/fapi/v1/openAlgoOrders")

	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"stop_loss":"2700","trace_id":"reads-together"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	held, released := counts()
	require.Positive(t, held)
	require.Equal(t, held, released, "the position was read before the open algo orders were asked, not beside it")
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:reads-together' AND event = 'dispatched'
		AND detail->'exit_caps'->0->>'limit' = '200'`), "the caps read beside the position went into the audit trail")
}

// The two reads a USDⓈ-M entry with exits starts together (its position
// and its exit caps) both need the symbol's filters. On a cold cache they
// share one exchangeInfo request, not one each: the fake answers it
// slowly, so both reads miss the cache while it is on its way.
func TestBinanceFuturesEntryReadsTheFiltersOnceForBothReads(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	b.binance.SetLatency("/fapi/v1/exchangeInfo", 300*time.Millisecond)

	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"stop_loss":"2700","trace_id":"filters-once"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Equal(t, 1, b.binance.Requests("/fapi/v1/exchangeInfo"), "each read asked for the filters")
}
