package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/internal/testfactory"
)

// A dead Bybit attempt's intent the sweeper left open for the signal's
// resend (asked_at set: Bybit answered that it holds no order under its
// ID) is settled as far as the sweeper goes, and stays open for as long as
// nobody resends. The unsettled-intent gauges (/readyz's state,
// hoox_unsettled_intent_oldest_seconds, whose HooxUnsettledIntent alert is
// critical past five minutes) counted it, so the alert fired for ever. An
// attempt whose venue was never asked is still counted.
func TestAnIntentLeftOpenForTheResendIsNotAnUnsettledAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	long := time.Now().Add(-2 * time.Hour)
	testfactory.Intent(t, pool, testfactory.IntentOpts{TraceID: "k:left-open", Exchange: "bybit",
		Order: exchange.Order{ClientOrderID: "hx-left-open", Symbol: "BTCUSDT"}, SentAt: long})
	_, err := pool.Exec(ctx, `UPDATE dispatch_intents SET asked_at = now() WHERE client_order_id = 'hx-left-open'`)
	require.NoError(t, err)
	s, err := db.ReadState(ctx, pool)
	require.NoError(t, err)
	require.Zero(t, s.UnsettledIntents, "left open on purpose, not an attempt whose outcome nobody has looked at")
	require.Zero(t, s.OldestUnsettledSeconds)

	testfactory.Intent(t, pool, testfactory.IntentOpts{TraceID: "k:dead", Exchange: "bybit",
		Order: exchange.Order{ClientOrderID: "hx-dead", Symbol: "BTCUSDT"}, SentAt: time.Now().Add(-10 * time.Minute)})
	s, err = db.ReadState(ctx, pool)
	require.NoError(t, err)
	require.EqualValues(t, 1, s.UnsettledIntents)
	require.InDelta(t, (10 * time.Minute).Seconds(), s.OldestUnsettledSeconds, 60)
}
