package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
)

// Strategy A's holding is locked in its own resting spot sell (a lone
// stop-loss leg placed after A's buy), and the free balance Binance
// reports is strategy B's coins. A close of A counts the sell recorded
// open as sold (db.LockLedger's Unrecorded): it has nothing to sell, and
// is refused (422) before anything is sent, rather than selling B's
// coins (min(ledger_A, free) = B's) and leaving B's entry with coins the
// account no longer has once A's stop executes. The trader cancels first.
func TestSpotCloseWhileItsOwnExitRestsLeavesOtherStrategiesCoins(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	b.binance.SetSpotCommission(decimal.Zero)

	entry, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"stop_loss":"2700","strategy":"a","trace_id":"rv-a-buy"}`))
	require.NoError(t, err)
	require.Len(t, entry.Legs, 1, "A's stop-loss rests, locking A's 1 ETH")
	_, err = b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"strategy":"b","trace_id":"rv-b-buy"}`))
	require.NoError(t, err)
	require.Equal(t, "1", ledgerOf(t, b, "binance", "ETHUSDT", "a"))
	require.Equal(t, "1", ledgerOf(t, b, "binance", "ETHUSDT", "b"))

	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"close","quantity":"1",
		"strategy":"a","trace_id":"rv-a-close"}`))
	if err == nil {
		// Whatever A's close sold came out of B's free coins: A's own are
		// locked in its stop.
		// The market then reaches A's stop: it sells A's 1 ETH as well.
		require.NoError(t, b.binance.FillOrder(entry.Legs[0].ClientOrderID))
		require.Failf(t, "strategy A's close sold strategy B's coins",
			"close of A sold %s ETH while A's 1 ETH rested in its own stop-loss; once the stop executed the account holds %s ETH, yet the ledger says B holds %s",
			out.Order.Quantity, b.binance.Balance("ETH"), ledgerOf(t, b, "binance", "ETHUSDT", "b"))
	}
	var gerr *gateway.Error
	require.True(t, errors.As(err, &gerr), "%v", err)
	require.Equal(t, codes.OrderRejected, gerr.Code, gerr.Detail)
}

// The ledger's trigger (00012/00027) clamped every movement at zero,
// which made the ledger depend on the order in which fills are
// *recorded*, not executed. A limit buy fills at the venue while hoox
// still has it `open` (its follow job polls later); the strategy then
// exits with a plain `sell`, recorded at once. The sale was clamped at 0
// and lost: once the follow job recorded the buy's fill, the entry rose
// to 1 — coins the strategy sold already — and the next `close` sold
// another strategy's. Since 00034 the sale takes the entry below zero by
// at most what the strategy's open buys have yet to fill, and the buy's
// fill brings it back to 0.
func TestSpotLedgerCountsASellRecordedBeforeTheBuysFill(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	b.binance.SetSpotCommission(decimal.Zero)

	buy, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"order_type":"limit","price":"2900","strategy":"dca","trace_id":"rv-dca-buy"}`))
	require.NoError(t, err)
	require.Equal(t, "open", string(buy.Order.Status), "the limit buy rests below the market")
	_, err = b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"strategy":"other","trace_id":"rv-other-buy"}`))
	require.NoError(t, err)

	// The market trades through the limit; hoox's follow job has not
	// polled yet.
	require.NoError(t, b.binance.FillOrder(buy.Order.ClientOrderID))
	// The strategy exits with a plain sell of what it bought.
	_, err = b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"sell","quantity":"1",
		"strategy":"dca","trace_id":"rv-dca-sell"}`))
	require.NoError(t, err)
	// The follow job now records the buy's fill (its own SQL).
	ok, err := db.ApplyOrderUpdate(ctx, b.pool, buy.Order.ClientOrderID, db.OrderUpdate{Status: exchange.StatusFilled,
		FilledQuantity: decimal.NewFromInt(1), AvgPrice: decimal.NewNullDecimal(decimal.NewFromInt(2900)),
		FillPrice: decimal.NewNullDecimal(decimal.NewFromInt(2900))}, nil)
	require.NoError(t, err)
	require.True(t, ok)

	require.Equal(t, "0", ledgerOf(t, b, "binance", "ETHUSDT", "dca"),
		"dca bought 1 ETH and sold 1 ETH: it holds nothing (the other strategy's 1 ETH is all the account has: %s)", b.binance.Balance("ETH"))
}

// A spot close whose claim session is lost: the ledger lock
// (db.LockLedgerSQL) is a transaction-scoped advisory lock of the claim's
// session, like the trace's lock. When that session is lost while the
// close is between its ledger read and its intent (here: reading the free
// balance), the lock is gone but the attempt goes on: another close of
// the same holding (another signal) takes the lock, reads the ledger with
// no sign of the first close (its intent is not written yet), and sells
// the holding; the first close then writes its intent under its own,
// different client order ID — the intent CAS (db.WriteIntent) only guards
// one ID — and would sell it again, out of coins the strategy never
// bought. The entry's version (spot_ledger_versions.closes), read under the lock
// and bumped by compare-and-set with the intent, stops the first close:
// its intent is not written, nothing is sent (503), one sale in all.
func TestLostClaimSessionStillSellsOneHoldingOnce(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	b.binance.SetSpotCommission(decimal.Zero)
	b.binance.SetBalance("ETH", decimal.RequireFromString("5")) // held before hoox, not the strategy's
	_, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"strategy":"swing","trace_id":"rv-lost-buy"}`))
	require.NoError(t, err)

	// Every free-balance read (sizing and the adapter's close) is slow.
	b.binance.SetLatency("/api/v3/account", 1500*time.Millisecond)
	reads := b.binance.Requests("/api/v3/account")
	first := make(chan error, 1)
	go func() {
		_, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"close","quantity":"1",
			"strategy":"swing","trace_id":"rv-lost-close-1"}`))
		first <- err
	}()
	// The first close holds the trace and ledger locks and reads the free
	// balance; its claim session dies.
	require.Eventually(t, func() bool { return b.binance.Requests("/api/v3/account") > reads }, 5*time.Second, 5*time.Millisecond)
	loseClaimConnection(t, b.pool)

	_, err2 := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"close","quantity":"1",
		"strategy":"swing","trace_id":"rv-lost-close-2"}`))
	err1 := <-first

	sold := decimal.Zero
	for _, o := range b.binance.Orders() {
		if o.Side == "SELL" {
			sold = sold.Add(o.ExecutedQty)
		}
	}
	// The close that read the entry's version before the other close's
	// intent bumped it sent nothing.
	require.True(t, strings.Contains(fmt.Sprint(err1), "went first") || strings.Contains(fmt.Sprint(err2), "went first"),
		"close 1: %v; close 2: %v", err1, err2)
	require.Equal(t, "1", sold.String(),
		"swing held 1 ETH through hoox; two closes sold %s (close 1: %v; close 2: %v); the account holds %s of the 5 it held before hoox",
		sold, err1, err2, b.binance.Balance("ETH"))
}
