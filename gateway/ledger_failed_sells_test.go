package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/jobs"
)

// A Binance spot close whose request reached the API but not yet the
// matching engine (-1007, booked an hour later: Binance spot books a late
// request, CHANGELOG.md 2025-08-12) is never seen by the sweeper: past the
// accept window it ends failed, a missed trade, its sell still possibly at
// the venue. The strategy's next close must count it as sold (422, nothing
// sent) until it is decided: when Binance books it an hour later it sells
// the strategy's 0.01 BTC, not a second 0.01 out of the trader's own 5.
// Before the fix a failed intent was no pending sell: the second close sold
// the 0.01 again, and the late one the trader's.
func TestCloseAfterAMissedSpotCloseDoesNotSellItsCoinsAgain(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	b.binance.SetSpotCommission(decimal.Zero) // no fee: the ledger's arithmetic is under test
	ctx := context.Background()
	d := decimal.RequireFromString
	b.binance.SetBalance("BTC", d("5")) // the trader's own
	_, err := b.svc.Execute(ctx, input(t, spotSignal("buy", "0.010", "swing", "missed-buy")))
	require.NoError(t, err)

	b.binance.Inject(binancefake.Fault{Kind: binancefake.FaultLateInEngine, Delay: time.Hour})
	_, err = b.svc.Execute(ctx, input(t, spotSignal("close", "1", "swing", "missed-close")))
	var gerr *gateway.Error
	require.True(t, errors.As(err, &gerr), "%v", err)
	require.Equal(t, codes.Unavailable, gerr.Code, "no reconciler runs here: the intent stays open")
	require.Equal(t, 1, b.binance.PendingInEngine(), "the close waits in Binance's matching engine")

	// Past the accept window the sweeper finds nothing at a venue that may
	// book late: the close is a missed trade (failed, order unknown).
	_, err = b.pool.Exec(ctx, `UPDATE dispatch_intents SET sent_at = now() - interval '10 minutes' WHERE trace_id = 'k:missed-close'`)
	require.NoError(t, err)
	sweeper := jobs.NewSweepWorker(b.pool, jobs.Config{SweepGrace: time.Millisecond}, b.venues, nil, nil)
	_, err = sweeper.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM dispatch_intents WHERE trace_id = 'k:missed-close' AND outcome = 'failed'`))
	require.Equal(t, "0.01", ledgerOf(t, b, "binance", "BTCUSDT", "swing"), "no fill recorded")

	_, err = b.svc.Execute(ctx, input(t, spotSignal("close", "1", "swing", "missed-close-again")))
	t.Logf("second close: %v; BTC %s", err, b.binance.Balance("BTC"))
	require.Truef(t, errors.As(err, &gerr), "the second close was placed (%v): the missed close's 0.01 BTC was not counted as sold", err)
	require.Equal(t, codes.OrderRejected, gerr.Code, gerr.Detail)
	require.Contains(t, gerr.Detail, "not recorded yet")

	// Binance books the first close after all.
	b.binance.Advance(time.Hour)
	require.Equal(t, 0, b.binance.PendingInEngine())
	require.Truef(t, b.binance.Balance("BTC").Equal(d("5")),
		"the account holds %s BTC: the strategy held 0.01, and its closes sold more, out of the trader's own 5", b.binance.Balance("BTC"))

	// The sweeper asks again and records it: the reservation ends with the
	// fill, and the ledger shows the strategy holds nothing. (The fake's
	// clock moved an hour: the first ask resynchronises the adapter's.)
	for range 2 {
		_, err = b.pool.Exec(ctx, `UPDATE dispatch_intents SET settled_at = now() - interval '1 hour' WHERE trace_id = 'k:missed-close'`)
		require.NoError(t, err)
		_, err = sweeper.Sweep(ctx)
		require.NoError(t, err)
	}
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM dispatch_intents WHERE trace_id = 'k:missed-close' AND outcome = 'dispatched'`))
	require.Equal(t, "0", ledgerOf(t, b, "binance", "BTCUSDT", "swing"))
	_, err = b.svc.Execute(ctx, input(t, spotSignal("close", "1", "swing", "missed-close-third")))
	require.True(t, errors.As(err, &gerr), "%v", err)
	require.Contains(t, gerr.Detail, "holds 0 BTC through hoox")
	require.NotContains(t, gerr.Detail, "not recorded yet", "the recorded close reserves nothing any more")
}

// A part of a Binance spot split close that Binance never shows (booked
// late, or never) is failed as a missed trade and stays reserved: the
// strategy's next close has nothing to sell. Binance spot never proves
// such a part absent, so only an operator can end that: having checked
// the venue, the operator sets the entry (PUT /admin/ledger) to what the
// strategy holds, and the reservations of its failed sells sent before
// that end with it; the next close sells the 100 ETH set, and the other
// strategy's 100 stay. Before the fix the set changed nothing: the part
// stayed reserved for ever, and every later close of the strategy was
// short by its 100 ETH.
func TestLedgerSetReleasesAMissedSpotClosePart(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	d := decimal.RequireFromString
	bigETH(b.binance)
	b.binance.SetSpotCommission(decimal.Zero)
	b.binance.SetBalance("ETH", d("330"))
	key := db.LedgerKey{Exchange: "binance", Mode: "live", Symbol: "ETHUSDT", Strategy: ""}
	_, err := db.SetLedger(ctx, b.pool, key, d("230"), "the strategy's", "admin")
	require.NoError(t, err)
	_, err = db.SetLedger(ctx, b.pool, db.LedgerKey{Exchange: "binance", Mode: "live", Symbol: "ETHUSDT", Strategy: "other"},
		d("100"), "another strategy's", "admin")
	require.NoError(t, err)

	// The first part after the primary reaches Binance's API but not its
	// matching engine, for good as far as this test goes.
	var once sync.Once
	svc := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: b.pool, MarkerPool: b.pool, Venues: b.venues,
		AfterVenue: func(string) {
			once.Do(func() {
				b.binance.Inject(binancefake.Fault{Kind: binancefake.FaultLateInEngine, Delay: 1000 * time.Hour})
			})
		}})
	t.Cleanup(svc.Close)
	_, err = svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"close","quantity":"1","trace_id":"missed-part"}`))
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = now() - interval '10 minutes' WHERE sent_at IS NOT NULL AND outcome IS NULL`)
	require.NoError(t, err)
	sweeper := jobs.NewSweepWorker(b.pool, jobs.Config{SweepGrace: time.Millisecond}, b.venues, nil, nil)
	for range 2 {
		_, err = sweeper.Sweep(ctx)
		require.NoError(t, err)
	}
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE trace_id = 'k:missed-part' AND outcome = 'failed'`),
		"the missed part is failed, its order unknown")
	require.Equal(t, 1, b.binance.PendingInEngine())
	t.Logf("after the close: ETH %s, ledger %s", b.binance.Balance("ETH"), ledgerOf(t, b, "binance", "ETHUSDT", ""))
	require.True(t, b.binance.Balance("ETH").Equal(d("200")), "100 and 30 sold, 100 missing")
	require.Equal(t, "100", ledgerOf(t, b, "binance", "ETHUSDT", ""))

	// While the part may still be booked, it counts as sold.
	_, err = svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"close","quantity":"1","trace_id":"missed-part-2"}`))
	var gerr *gateway.Error
	require.True(t, errors.As(err, &gerr), "%v", err)
	require.Contains(t, gerr.Detail, "nothing to sell")

	// The operator finds no such order at Binance and says what the
	// strategy holds.
	_, err = db.SetLedger(ctx, b.pool, key, d("100"), "missed part not at Binance", "admin")
	require.NoError(t, err)

	out, err := svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"close","quantity":"1","trace_id":"missed-part-3"}`))
	require.NoErrorf(t, err, "the operator's set left the missed part reserved: the close still has nothing to sell")
	require.Equal(t, "100", out.Order.Quantity.String())
	require.True(t, b.binance.Balance("ETH").Equal(d("100")), "the other strategy's 100 ETH stay")
	require.Equal(t, "0", ledgerOf(t, b, "binance", "ETHUSDT", ""))
	require.Equal(t, "100", ledgerOf(t, b, "binance", "ETHUSDT", "other"))
	var released string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT detail->'released_sells'->0->>'quantity' FROM trace_history
		WHERE trace_id = 'admin:ledger' AND event = 'ledger_set' ORDER BY at DESC LIMIT 1`).Scan(&released))
	require.Equal(t, "100", released, "the set's audit names the reservation it ended")
}

// A part of a Bybit spot split close (200 ETH, at most 100 a market
// order) given up while Bybit could not be asked stays reserved; the operator, having found no such order, sets
// the entry and the next close sells the strategy's last 100 ETH. When
// Bybit answers again the released part is not opened again and sent
// (AskUnknown reopens a given-up part where a same-ID send is safe): it
// would sell the other strategy's 100 ETH. Released, it is only asked
// about, and cancelled if it turns up resting.
func TestReleasedBybitClosePartIsNotSentAgainWhenBybitAnswers(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	d := decimal.RequireFromString
	b.bybit.SetInstrument(bybitfake.CategorySpot, bybitfake.Instrument{Symbol: "ETHUSDT", BaseCoin: "ETH", QuoteCoin: "USDT",
		TickSize: d("0.01"), QtyStep: d("0.0001"), MinNotional: d("5"), MaxMktOrderQty: d("100")})
	b.bybit.SetBalance("ETH", d("300"))
	key := db.LedgerKey{Exchange: "bybit-spot", Mode: "live", Symbol: "ETHUSDT", Strategy: ""}
	_, err := db.SetLedger(ctx, b.pool, key, d("200"), "the strategy's", "admin")
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
	_, err = svc.Execute(ctx, input(t, `{"exchange":"bybit-spot","symbol":"ETHUSDT","action":"close","quantity":"1","trace_id":"released-part"}`))
	require.NoError(t, err)

	// Bybit's queries fail for three hours: the second part is given up.
	b.bybit.Inject(bybitfake.PathRealtime, 1_000_000, bybitfake.Fault{HTTPStatus: http.StatusServiceUnavailable})
	b.bybit.Inject(bybitfake.PathHistory, 1_000_000, bybitfake.Fault{HTTPStatus: http.StatusServiceUnavailable})
	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = CASE WHEN sent_at IS NOT NULL THEN now() - interval '3 hours' END, created_at = now() - interval '3 hours'`)
	require.NoError(t, err)
	sweeper := jobs.NewSweepWorker(b.pool, jobs.Config{SweepGrace: time.Millisecond, SweepGiveUp: time.Hour}, b.venues, nil, nil)
	_, err = sweeper.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE outcome = 'failed'`), "the second part is given up")
	b.bybit.ClearFaults()
	require.True(t, b.bybit.Balance("ETH").WalletBalance.Equal(d("200")), "the first 100 sold")
	require.Equal(t, "100", ledgerOf(t, b, "bybit-spot", "ETHUSDT", ""))

	_, err = db.SetLedger(ctx, b.pool, key, d("100"), "given-up part not at Bybit", "admin")
	require.NoError(t, err)
	out, err := svc.Execute(ctx, input(t, `{"exchange":"bybit-spot","symbol":"ETHUSDT","action":"close","quantity":"1","trace_id":"released-part-again"}`))
	require.NoError(t, err, "the released part no longer counts as sold")
	require.Equal(t, "100", out.Order.Quantity.String())
	require.True(t, b.bybit.Balance("ETH").WalletBalance.Equal(d("100")))

	for range 3 {
		_, err = b.pool.Exec(ctx, `UPDATE order_legs SET settled_at = settled_at - interval '1 hour' WHERE settled_at IS NOT NULL`)
		require.NoError(t, err)
		_, err = sweeper.Sweep(ctx)
		require.NoError(t, err)
	}
	left := b.bybit.Balance("ETH").WalletBalance
	require.Truef(t, left.Equal(d("100")), "the released part was sent again and sold %s of the other strategy's 100 ETH", d("100").Sub(left))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE outcome = 'failed' AND cancelled_by = 'admin:ledger'`))
	require.Equal(t, "100", ledgerOf(t, b, "bybit-spot", "ETHUSDT", "other"))
}

// A Binance spot close of 230 ETH (at most 100 a market order: 100 now,
// parts of 100 and 30 after) is missed: its first order waits in the
// matching engine and the sweeper ends it failed. The operator, finding
// nothing at Binance, sets the entry to the 230 ETH the strategy holds,
// which releases the missed close, and the strategy's next close sells
// them. When Binance books the missed order after all, the sweeper records
// it; the parts it had planned are not sent then: the close they belong
// to was given up, and its 130 ETH more would come out of the trader's own
// coins. (Before, a primary found late planned and sent its parts.)
func TestReleasedMissedSplitCloseSendsNoPartsWhenItTurnsUp(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	d := decimal.RequireFromString
	bigETH(b.binance)
	b.binance.SetSpotCommission(decimal.Zero)
	b.binance.SetBalance("ETH", d("730")) // 230 the strategy's, 500 the trader's own
	key := db.LedgerKey{Exchange: "binance", Mode: "live", Symbol: "ETHUSDT", Strategy: ""}
	_, err := db.SetLedger(ctx, b.pool, key, d("230"), "the strategy's", "admin")
	require.NoError(t, err)

	b.binance.Inject(binancefake.Fault{Kind: binancefake.FaultLateInEngine, Delay: time.Hour})
	_, err = b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"close","quantity":"1","trace_id":"released-split"}`))
	require.Error(t, err, "no reconciler runs here: the intent stays open")
	_, err = b.pool.Exec(ctx, `UPDATE dispatch_intents SET sent_at = now() - interval '10 minutes' WHERE trace_id = 'k:released-split'`)
	require.NoError(t, err)
	sweeper := jobs.NewSweepWorker(b.pool, jobs.Config{SweepGrace: time.Millisecond}, b.venues, nil, nil)
	_, err = sweeper.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM dispatch_intents WHERE trace_id = 'k:released-split' AND outcome = 'failed'`))

	e, err := db.SetLedger(ctx, b.pool, key, d("230"), "the missed close is not at Binance", "admin")
	require.NoError(t, err)
	require.Len(t, e.Released, 1)
	require.Equal(t, "230", e.Released[0].Quantity, "the missed close reserved its parts too")
	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"close","quantity":"1","trace_id":"released-split-again"}`))
	require.NoError(t, err)
	require.Len(t, out.Legs, 2)
	require.True(t, b.binance.Balance("ETH").Equal(d("500")), "the strategy's 230 ETH sold")

	// Binance books the missed order; the sweeper finds and records it.
	b.binance.Advance(time.Hour)
	require.Equal(t, 0, b.binance.PendingInEngine())
	require.True(t, b.binance.Balance("ETH").Equal(d("400")), "the missed order sold 100 ETH after all")
	for range 3 {
		_, err = b.pool.Exec(ctx, `UPDATE dispatch_intents SET settled_at = now() - interval '1 hour' WHERE trace_id = 'k:released-split'`)
		require.NoError(t, err)
		_, err = b.pool.Exec(ctx, `UPDATE order_legs SET created_at = now() - interval '1 hour'`)
		require.NoError(t, err)
		_, err = sweeper.Sweep(ctx)
		require.NoError(t, err)
	}
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM dispatch_intents WHERE trace_id = 'k:released-split' AND outcome = 'dispatched'`))
	left := b.binance.Balance("ETH")
	require.Truef(t, left.Equal(d("400")), "the released close's parts were sent when it turned up: %s more ETH of the trader's sold", d("400").Sub(left))
	require.Equal(t, 2, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE trace_id = 'k:released-split' AND outcome = 'not_placed'`))
	require.Equal(t, 2, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:released-split' AND event = 'leg_failed'`))
}
