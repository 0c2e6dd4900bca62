package gateway_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
)

// restingAt reports whether the venue fake behind exchangeName still
// holds the order (or exit) clientOrderID resting: NEW, live, open.
func restingAt(t *testing.T, b *adaptersBundle, exchangeName, clientOrderID string) bool {
	t.Helper()
	switch exchangeName {
	case "paper":
		return count(t, b.pool, `SELECT count(*) FROM paper_orders WHERE client_order_id = '`+clientOrderID+`' AND status = 'open'`) == 1
	case "binance-futures":
		for _, o := range b.binance.Orders() {
			if o.ClientOrderID == clientOrderID {
				return o.Status == "NEW"
			}
		}
		for _, a := range b.binance.AlgoOrders() {
			if a.ClientAlgoID == clientOrderID {
				return a.Status == "NEW"
			}
		}
	case "bybit":
		for _, o := range b.bybit.Orders() {
			if o.OrderLinkID == clientOrderID {
				return o.Status == "New"
			}
		}
	case "okx-swap":
		for _, o := range b.okx.Orders() {
			if o.ClOrdID == clientOrderID {
				return o.State == "live"
			}
		}
		for _, a := range b.okx.AlgoOrders() {
			if a.AlgoClOrdID == clientOrderID {
				return a.State == "live"
			}
		}
	default:
		t.Fatalf("no fake for %s", exchangeName)
	}
	return false
}

// A resting limit entry far from the market on each derivatives venue
// (and paper), as strategy s sends it.
var restingEntries = map[string]string{
	"paper":           `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","order_type":"limit","price":"90"`,
	"binance-futures": `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1","order_type":"limit","price":"2500"`,
	"bybit":           `{"exchange":"bybit","symbol":"ETHUSDT","action":"long","quantity":"1","order_type":"limit","price":"2500"`,
	"okx-swap":        `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"long","quantity":"0.03","order_type":"limit","price":"50000"`,
}

// cancelOf is strategy's cancel of restingEntries' symbol on exchangeName
// (every strategy's when strategy is "").
func cancelOf(exchangeName, strategy, key string) string {
	symbol := "ETHUSDT"
	if exchangeName == "paper" || exchangeName == "okx-swap" {
		symbol = "BTCUSDT"
	}
	s := ""
	if strategy != "" {
		s = `,"strategy":"` + strategy + `"`
	}
	return `{"exchange":"` + exchangeName + `","symbol":"` + symbol + `","action":"cancel"` + s + `,"trace_id":"` + key + `"}`
}

// Two strategies each rest a limit entry on one account and symbol, on
// every venue that is not spot. Strategy A cancels (its own resting
// entry, under its strategy name as the README asks): B's entry keeps
// resting at the venue and stays recorded open. A cancel without a
// strategy then takes B's too.
func TestOneStrategysCancelLeavesAnotherStrategysRestingEntryOnEveryVenue(t *testing.T) {
	t.Parallel()
	for _, venue := range []string{"paper", "binance-futures", "bybit", "okx-swap"} {
		t.Run(venue, func(t *testing.T) {
			t.Parallel()
			b := setupAdapters(t)
			ctx := context.Background()
			bEntry, err := b.svc.Execute(ctx, input(t, restingEntries[venue]+`,"strategy":"b","trace_id":"rest-b"}`))
			require.NoError(t, err)
			require.Equal(t, "open", bEntry.Order.Status)
			aEntry, err := b.svc.Execute(ctx, input(t, restingEntries[venue]+`,"strategy":"a","trace_id":"rest-a"}`))
			require.NoError(t, err)
			require.Equal(t, "open", aEntry.Order.Status)

			cancel, err := b.svc.Execute(ctx, input(t, cancelOf(venue, "a", "rest-a-cancel")))
			require.NoError(t, err)
			require.Equal(t, []string{aEntry.Order.ClientOrderID}, cancelIDs(cancel.Cancelled), "A's cancel is for A's entry only")
			require.Truef(t, restingAt(t, b, venue, bEntry.Order.ClientOrderID),
				"strategy A's cancel cancelled strategy B's resting entry %s at %s", bEntry.Order.ClientOrderID, venue)
			require.False(t, restingAt(t, b, venue, aEntry.Order.ClientOrderID), "A's entry is cancelled at the venue")
			require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE client_order_id = '`+bEntry.Order.ClientOrderID+`' AND status = 'open'`))

			all, err := b.svc.Execute(ctx, input(t, cancelOf(venue, "", "rest-cancel-all")))
			require.NoError(t, err)
			require.Equal(t, []string{bEntry.Order.ClientOrderID}, cancelIDs(all.Cancelled), "a cancel without strategy is for every strategy")
			require.False(t, restingAt(t, b, venue, bEntry.Order.ClientOrderID))
		})
	}
}

// Strategy B holds a long with its stop-loss (Binance USDⓈ-M: a
// reduce-only algo order placed after the fill) or its trailing stop
// (OKX swaps: a move_order_stop algo order); strategy A rests a limit
// entry on the same symbol and cancels it. B's exit keeps resting: A's
// cancel must not leave B's position without the stop B asked for.
func TestOneStrategysCancelLeavesAnotherStrategysExitsOnDerivatives(t *testing.T) {
	t.Parallel()
	exits := map[string]string{
		"binance-futures": `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1","stop_loss":"2900","strategy":"b","trace_id":"exit-b"}`,
		"okx-swap":        `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"long","quantity":"0.03","trailing_stop":{"percent":1.5},"strategy":"b","trace_id":"exit-b"}`,
	}
	for venue, long := range exits {
		t.Run(venue, func(t *testing.T) {
			t.Parallel()
			b := setupAdapters(t)
			ctx := context.Background()
			bLong, err := b.svc.Execute(ctx, input(t, long))
			require.NoError(t, err)
			require.Equal(t, db.TraceDispatched, bLong.Status)
			require.Len(t, bLong.Legs, 1)
			stop := bLong.Legs[0].ClientOrderID
			require.Equal(t, string(exchange.StatusOpen), bLong.Legs[0].Status)
			require.True(t, restingAt(t, b, venue, stop))
			aEntry, err := b.svc.Execute(ctx, input(t, restingEntries[venue]+`,"strategy":"a","trace_id":"exit-a"}`))
			require.NoError(t, err)

			cancel, err := b.svc.Execute(ctx, input(t, cancelOf(venue, "a", "exit-a-cancel")))
			require.NoError(t, err)
			require.Equal(t, []string{aEntry.Order.ClientOrderID}, cancelIDs(cancel.Cancelled))
			require.Truef(t, restingAt(t, b, venue, stop), "strategy A's cancel cancelled strategy B's %s %s at %s: B's long is unprotected",
				bLong.Legs[0].Role, stop, venue)
			require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE client_order_id = '`+stop+`' AND status = 'open'`))

			// B's own cancel takes it.
			mine, err := b.svc.Execute(ctx, input(t, cancelOf(venue, "b", "exit-b-cancel")))
			require.NoError(t, err)
			require.Equal(t, []string{stop}, cancelIDs(mine.Cancelled))
			require.False(t, restingAt(t, b, venue, stop))
		})
	}
}

// An order recorded without a strategy (placed before hoox recorded one
// off spot, its signal holding none for the upgrade to fill in) cannot be
// told apart: every cancel of its symbol takes it, a cancel naming any
// strategy too, as before.
func TestCancelNamingAStrategyTakesAnOrderRecordedWithoutOne(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	old, err := b.svc.Execute(ctx, input(t, restingEntries["binance-futures"]+`,"trace_id":"old-entry"}`))
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE orders SET strategy = NULL WHERE client_order_id = $1`, old.Order.ClientOrderID)
	require.NoError(t, err)
	other, err := b.svc.Execute(ctx, input(t, restingEntries["binance-futures"]+`,"strategy":"b","trace_id":"b-entry"}`))
	require.NoError(t, err)

	cancel, err := b.svc.Execute(ctx, input(t, cancelOf("binance-futures", "a", "old-a-cancel")))
	require.NoError(t, err)
	require.Equal(t, []string{old.Order.ClientOrderID}, cancelIDs(cancel.Cancelled))
	require.True(t, restingAt(t, b, "binance-futures", other.Order.ClientOrderID), "B's entry, recorded with B's strategy, rests")
}
