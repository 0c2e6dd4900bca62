package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/jobs"
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
	pgtest.TerminateLockHolder(t, b.pool)

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

// A strategy holds 230 ETH at Bybit spot through hoox (its ledger); the
// account also holds 100 ETH that are not the strategy's (another
// strategy's ledger). The strategy's close is split in parts of at most
// 100 (Bybit's market cap): the second part gets an answer hoox reads as
// "may exist" and Bybit's order queries then fail for longer than
// SweepGiveUp, so the leg runner gives the part up (failed, unknown,
// notified "check the venue"); the third part is sent. The strategy's next
// close comes before Bybit answers again. The given-up part may still sell
// (found executed, or opened again and sent by AskUnknown), so it counts
// in the strategy's pending sells (db readLedgerSQL) and the close has
// nothing to sell: refused, nothing sent. Once Bybit answers, AskUnknown
// opens the part again and the next pass sells the strategy's last 100
// ETH; the other holder's 100 stay. Before the fix only open legs counted:
// the second close sold those 100 ETH and the reopened part sold the other
// holder's.
func TestReopenedSpotClosePartDoesNotSellCoinsSoldSince(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	d := decimal.RequireFromString
	b.bybit.SetInstrument(bybitfake.CategorySpot, bybitfake.Instrument{Symbol: "ETHUSDT", BaseCoin: "ETH", QuoteCoin: "USDT",
		TickSize: d("0.01"), QtyStep: d("0.0001"), MinNotional: d("5"), MaxMktOrderQty: d("100")})
	b.bybit.SetBalance("ETH", d("330"))
	_, err := db.SetLedger(ctx, b.pool, db.LedgerKey{Exchange: "bybit-spot", Mode: "live", Symbol: "ETHUSDT", Strategy: ""},
		d("230"), "the strategy's", "admin")
	require.NoError(t, err)
	_, err = db.SetLedger(ctx, b.pool, db.LedgerKey{Exchange: "bybit-spot", Mode: "live", Symbol: "ETHUSDT", Strategy: "other"},
		d("100"), "another strategy's", "admin")
	require.NoError(t, err)

	var once sync.Once
	svc := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: b.pool, MarkerPool: b.pool, Venues: b.venues,
		AfterVenue: func(string) {
			once.Do(func() { b.bybit.InjectPlacements(1, bybitfake.Refuse(170999, "Untabled refusal.")) })
		}})
	t.Cleanup(svc.Close)
	out, err := svc.Execute(ctx, input(t, `{"exchange":"bybit-spot","symbol":"ETHUSDT","action":"close","quantity":"1","trace_id":"ledger-given-up-part"}`))
	require.NoError(t, err)
	t.Logf("close: %s, sold so far %s", out.Status, d("330").Sub(b.bybit.Balance("ETH").WalletBalance))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE outcome IS NULL AND sent_at IS NOT NULL`))

	// Bybit's queries fail for three hours: the part is given up, the
	// third part is sent.
	b.bybit.Inject(bybitfake.PathRealtime, 1_000_000, bybitfake.Fault{HTTPStatus: http.StatusServiceUnavailable})
	b.bybit.Inject(bybitfake.PathHistory, 1_000_000, bybitfake.Fault{HTTPStatus: http.StatusServiceUnavailable})
	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = CASE WHEN sent_at IS NOT NULL THEN now() - interval '3 hours' END, created_at = now() - interval '3 hours'`)
	require.NoError(t, err)
	sweeper := jobs.NewSweepWorker(b.pool, jobs.Config{SweepGrace: time.Millisecond, SweepGiveUp: time.Hour}, b.venues, nil, nil)
	_, err = sweeper.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE outcome = 'failed'`), "the second part is given up")
	b.bybit.ClearFaults()
	t.Logf("after the give-up: balance %s, ledger %s", b.bybit.Balance("ETH").WalletBalance, ledgerOf(t, b, "bybit-spot", "ETHUSDT", ""))

	// The strategy closes what its ledger still holds.
	_, err = b.svc.Execute(ctx, input(t, `{"exchange":"bybit-spot","symbol":"ETHUSDT","action":"close","quantity":"1","trace_id":"ledger-given-up-part-again"}`))
	t.Logf("second close: %v; balance %s, ledger %s", err, b.bybit.Balance("ETH").WalletBalance, ledgerOf(t, b, "bybit-spot", "ETHUSDT", ""))
	require.ErrorContains(t, err, "nothing to sell", "the given-up part's 100 ETH count as sold")
	require.True(t, b.bybit.Balance("ETH").WalletBalance.Equal(d("200")), "the second close sold nothing")

	// Bybit answers again: the sweeper asks about the given-up part, then
	// finishes the open legs.
	for range 3 {
		_, err = b.pool.Exec(ctx, `UPDATE order_legs SET settled_at = settled_at - interval '1 hour' WHERE settled_at IS NOT NULL`)
		require.NoError(t, err)
		_, err = sweeper.Sweep(ctx)
		require.NoError(t, err)
	}
	left := b.bybit.Balance("ETH").WalletBalance
	t.Logf("after the sweeps: balance %s, strategy ledger %s, other ledger %s", left,
		ledgerOf(t, b, "bybit-spot", "ETHUSDT", ""), ledgerOf(t, b, "bybit-spot", "ETHUSDT", "other"))
	require.Truef(t, left.GreaterThanOrEqual(d("100")),
		"the account holds %s ETH: the strategy's 230 were sold and the reopened part sold %s of the other holder's 100 too",
		left, d("100").Sub(left))
	require.Truef(t, left.Equal(d("100")), "the reopened part sold the strategy's last 100 ETH: the account holds %s", left)
	require.Equal(t, "0", ledgerOf(t, b, "bybit-spot", "ETHUSDT", ""))
	require.Equal(t, "100", ledgerOf(t, b, "bybit-spot", "ETHUSDT", "other"))
}
