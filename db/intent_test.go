package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/pgtest"
)

// An attempt that called the venue since its claim read the kill switch
// (Intent.AfterVenueCall) reads it again in its intent's write: while it
// is engaged nothing is written — neither the intent, nor its event, nor
// a spot close's ledger version — and ErrKillSwitch says so. Released, the
// same write goes through. An attempt that called nothing writes through
// WriteIntentSQL, which does not read the switch (the claim's reading is
// as fresh as it can be there).
func TestWriteIntentAfterAVenueCallReadsTheKillSwitch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.OpenPool(t, pgtest.NewDatabase(t))
	spotOrder(t, pool, "buy", "BTC", "trend", "filled", "1")
	k := db.LedgerKey{Exchange: "binance", Mode: "live", Symbol: "BTCUSDT", Strategy: "trend"}
	plain := func(id string) *db.Intent {
		return &db.Intent{ClientOrderID: id, LockKey: "k:" + id, TraceID: "k:" + id, Fingerprint: "fp", Mode: "live",
			KeySource: "client", Exchange: "paper", Order: order(id), Signal: []byte(`{}`), ReceivedAt: time.Now()}
	}
	spotClose := func(id string) *db.Intent {
		in := plain(id)
		in.Exchange = "binance"
		in.Order = exchange.Order{ClientOrderID: id, Symbol: "BTCUSDT", Action: "close", Side: "sell", OrderType: "market",
			Quantity: decimal.NewFromInt(1)}
		in.Ledger = &db.LedgerVersion{LedgerKey: k}
		return in
	}
	version := func() int64 {
		t.Helper()
		held, err := db.LockLedger(ctx, pool, k)
		require.NoError(t, err)
		return held.Closes
	}
	written := func(id string) int {
		return countRows(t, pool, `SELECT count(*) FROM dispatch_intents WHERE client_order_id = $1`, id) +
			countRows(t, pool, `SELECT count(*) FROM trace_events WHERE event = 'dispatch_started' AND trace_id = $1`, "k:"+id)
	}

	_, err := db.SetKillSwitch(ctx, pool, true, "exchange incident", "admin")
	require.NoError(t, err)
	for _, in := range []*db.Intent{plain("hx-halted"), spotClose("hx-halted-close")} {
		in.AfterVenueCall = true
		require.ErrorIs(t, db.WriteIntent(ctx, pool, in, true), db.ErrKillSwitch, in.ClientOrderID)
		require.Zero(t, written(in.ClientOrderID), "nothing armed under the switch")
	}
	require.Zero(t, version(), "the refused close bumped no version")

	unread := plain("hx-no-call")
	require.NoError(t, db.WriteIntent(ctx, pool, unread, true), "no venue call since the claim: the claim's reading stands")
	require.Equal(t, 2, written("hx-no-call"))

	_, err = db.SetKillSwitch(ctx, pool, false, "resolved", "admin")
	require.NoError(t, err)
	for _, in := range []*db.Intent{plain("hx-halted"), spotClose("hx-halted-close")} {
		in.AfterVenueCall = true
		require.NoError(t, db.WriteIntent(ctx, pool, in, true), in.ClientOrderID)
		require.Equal(t, 1, in.Attempts)
		require.False(t, in.SentAt.IsZero())
		require.Equal(t, 2, written(in.ClientOrderID))
	}
	require.Equal(t, int64(1), version())

	// The compare-and-set still holds after a venue call.
	again := plain("hx-halted")
	again.AfterVenueCall = true
	require.ErrorIs(t, db.WriteIntent(ctx, pool, again, true), db.ErrIntentConsumed)
}

// The send guard an adapter runs right before an order's request, when
// its Place read the venue first: released, the order goes; engaged, it
// is "halted, nothing sent" (ErrKillSwitch with exchange.ErrUnreachable,
// which every caller settles as a send that never left); the switch
// unreadable, nothing is sent either — and it is not called halted.
func TestSendGuardReadsTheKillSwitch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, url)
	guard := db.SendGuard(pool)
	require.NoError(t, guard(ctx), "never set: released")

	_, err := db.SetKillSwitch(ctx, pool, true, "venue incident", "ops")
	require.NoError(t, err)
	err = guard(ctx)
	require.ErrorIs(t, err, db.ErrKillSwitch)
	require.ErrorIs(t, err, exchange.ErrUnreachable)

	_, err = db.SetKillSwitch(ctx, pool, false, "", "ops")
	require.NoError(t, err)
	require.NoError(t, guard(ctx))

	closed := pgtest.OpenPool(t, url)
	closed.Close()
	err = db.SendGuard(closed)(ctx)
	require.ErrorIs(t, err, exchange.ErrUnreachable)
	require.ErrorIs(t, err, db.ErrUnavailable)
	require.NotErrorIs(t, err, db.ErrKillSwitch)
}
