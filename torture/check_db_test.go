package torture

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// DESIGN.md: "Nothing stays reconciling forever". A signal whose placement
// never reached the venue (http_5xx_unsent, a kill before the send) and
// whose reconcile is stuck, or still waiting to re-place its order, leaves
// nothing at the venue: the checker waits for its trace to settle, and
// fails it once the recovery bound has passed, or an order the reconcile
// places after the checker's snapshot would never be judged.
func TestCheckWaitsForReconcilingTraces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.NewDatabase(t)
	bn, err := binancefake.Start("127.0.0.1:0", binancefake.Options{})
	require.NoError(t, err)
	t.Cleanup(bn.Close)
	by, err := bybitfake.Start("127.0.0.1:0", bybitfake.Options{})
	require.NoError(t, err)
	t.Cleanup(by.Close)

	b := setupCheck(t, binanceSignal(ModeKey))
	s := b.s
	s.dbURL, s.binance, s.bybit = dbURL, bn, by
	s.cfg.RecoveryBound = 2 * time.Second

	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `
INSERT INTO trace_ids (trace_id, fingerprint, mode, key_source, status, exchange, symbol, action, signal, client_order_id, expires_at)
VALUES ('k:torture-1-0', 'fp', 'live', 'client', 'reconciling', 'binance', 'HXUSDT', 'buy', '{}', 'hxa', now() + interval '1 hour')`)
	require.NoError(t, err)
	b.send(0, time.Second, answer{Status: 202, TraceID: "k:torture-1-0", Body: `{"status":"reconciling"}`})

	res, err := s.check(ctx)
	require.NoError(t, err)
	require.Len(t, res.Failures, 1, "trace k:torture-1-0 is still reconciling after the recovery bound (checker waited %s)", res.Recovery)
	f := res.Failures[0]
	require.Equal(t, checkSettled, f.Check)
	require.Equal(t, 0, f.Signal, "the answer named the trace to signal 0")
	require.GreaterOrEqual(t, res.Recovery, s.cfg.RecoveryBound, "the checker waited out the bound for the trace to settle")
}
