package binance_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
)

// ExitCaps reads the symbol's MAX_NUM_ALGO_ORDERS and the open algo
// orders; an exit beyond the cap that Binance refuses (-4045) is a
// refusal for good with Binance's message, never an unknown outcome to
// reconcile.
func TestFuturesExitOverTheAlgoCapIsRefusedForGood(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	entry := exchange.Order{Symbol: "BTCUSDT", Action: "buy", Side: "buy", OrderType: "market", Quantity: d("0.01"),
		TakeProfit: &exchange.Attached{Price: decimal.NewNullDecimal(d("55000"))},
		StopLoss:   &exchange.Attached{Price: decimal.NewNullDecimal(d("45000"))}}
	uncapped := setup(t, binance.MarketFutures)
	caps, err := uncapped.venue.ExitCaps(ctx, entry)
	require.NoError(t, err)
	require.Equal(t, []exchange.ExitCap{{Filter: "Binance USDⓈ-M's conditional order limit", Counted: "stop/take-profit orders", Symbol: "all symbols",
		Limit: binance.AccountAlgoOrderLimit, Open: 0, Adds: 2, EachExit: true, AllSymbols: true}}, caps,
		"no MAX_NUM_ALGO_ORDERS published (Binance removed it, change-log.md 2025-12-29): the account's limit across all symbols")
	require.Equal(t, 1, uncapped.fake.Requests("/fapi/v1/openAlgoOrders"))
	bad := entry
	bad.Symbol = "NOPEUSDT"
	caps, err = uncapped.venue.ExitCaps(ctx, bad)
	require.NoError(t, err, "a symbol Binance does not list is the placement's refusal, not an outage")
	require.Empty(t, caps)

	b := setup(t, binance.MarketFutures)
	b.fake.SetMaxNumAlgoOrders("BTCUSDT", 1)
	venue := b.venue
	exit := exchange.Order{ClientOrderID: newID(), Symbol: "BTCUSDT", Action: "close", Side: "sell", ReduceOnly: true,
		OrderType: "market", Quantity: d("0.01"), Exit: exchange.RoleStopLoss,
		StopLoss: &exchange.Attached{Price: decimal.NewNullDecimal(d("45000"))}}
	placed, err := venue.Place(ctx, exit)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, placed.Status, placed.Reason)

	caps, err = venue.ExitCaps(ctx, entry)
	require.NoError(t, err)
	require.Equal(t, []exchange.ExitCap{{Filter: "MAX_NUM_ALGO_ORDERS", Counted: "stop/take-profit orders", Symbol: "BTCUSDT", Limit: 1, Open: 1, Adds: 2, EachExit: true}}, caps)
	require.False(t, caps[0].Fits())
	require.Equal(t, 1, b.fake.Requests("/fapi/v1/openAlgoOrders"))

	exit.ClientOrderID = newID()
	r, err := venue.Place(ctx, exit)
	require.NoError(t, err, "a refusal for good, not an unknown outcome")
	require.Equal(t, exchange.StatusRejected, r.Status)
	require.Contains(t, r.Reason, "Reach max stop order limit.")
	require.Len(t, b.fake.AlgoOrders(), 1)
}

// Spot counts, from one openOrders read, the open orders
// MAX_NUM_ALGO_ORDERS counts (an OCO list's STOP_LOSS, not its
// LIMIT_MAKER) and those MAX_NUM_ORDERS counts (all); the entry's exits,
// one list, add one algo order and two orders.
func TestSpotExitCapsCountTheListsStopOrders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketSpot)
	b.fake.SetMaxNumAlgoOrders("BTCUSDT", 5)
	b.fake.SetMaxNumOrders("BTCUSDT", 50)
	b.fake.SetBalance("BTC", d("1"))
	list := exchange.Order{ClientOrderID: newID(), Symbol: "BTCUSDT", Action: "close", Side: "sell", OrderType: "market",
		Quantity: d("0.01"), Exit: exchange.RoleOCO,
		TakeProfit: &exchange.Attached{Price: decimal.NewNullDecimal(d("55000"))},
		StopLoss:   &exchange.Attached{Price: decimal.NewNullDecimal(d("45000"))}}
	placed, err := b.venue.Place(ctx, list)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, placed.Status, placed.Reason)
	caps, err := b.venue.ExitCaps(ctx, exchange.Order{Symbol: "BTCUSDT", Action: "buy", Side: "buy", OrderType: "market",
		Quantity: d("0.01"), TakeProfit: list.TakeProfit, StopLoss: list.StopLoss})
	require.NoError(t, err)
	require.Equal(t, []exchange.ExitCap{{Filter: "MAX_NUM_ALGO_ORDERS", Counted: "stop/take-profit orders", Symbol: "BTCUSDT", Limit: 5, Open: 1, Adds: 1},
		{Filter: "MAX_NUM_ORDERS", Counted: "orders", Symbol: "BTCUSDT", Limit: 50, Open: 2, Adds: 2}}, caps, "one read for both: the list's two orders are open")
	require.Equal(t, 1, b.fake.Requests("/api/v3/openOrders"))
	caps, err = b.venue.ExitCaps(ctx, exchange.Order{Symbol: "BTCUSDT", Action: "buy", Side: "buy", OrderType: "market",
		Quantity: d("0.01"), TakeProfit: list.TakeProfit})
	require.NoError(t, err)
	require.Equal(t, []exchange.ExitCap{{Filter: "MAX_NUM_ORDERS", Counted: "orders", Symbol: "BTCUSDT", Limit: 50, Open: 2, Adds: 1}}, caps,
		"a take-profit alone rests as a LIMIT_MAKER: not an algo order")
}
