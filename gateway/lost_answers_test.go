package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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

// replyCutter cuts a connection after the client wrote a message that
// holds marker: the server receives (and executes) it, and the client never
// reads the answer — what a connection reset, a pooler restart or a
// failover does to a statement in flight.
type replyCutter struct {
	marker atomic.Pointer[[]byte]
}

func (rc *replyCutter) arm(marker string) {
	m := []byte(marker)
	rc.marker.Store(&m)
}

type cutConn struct {
	net.Conn
	rc  *replyCutter
	cut atomic.Bool
}

func (c *cutConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if m := c.rc.marker.Load(); m != nil && bytes.Contains(p, *m) && c.rc.marker.CompareAndSwap(m, nil) {
		c.cut.Store(true)
	}
	return n, err
}

func (c *cutConn) Read(p []byte) (int, error) {
	if c.cut.Load() {
		// Let the server run and commit what it received, then lose
		// its answer.
		time.Sleep(500 * time.Millisecond)
		_ = c.Conn.Close()
		return 0, errors.New("replyCutter: connection reset before the answer")
	}
	return c.Conn.Read(p)
}

// cuttingPool opens a pool on url whose connections a replyCutter can cut.
func cuttingPool(t *testing.T, url string, rc *replyCutter) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	dial := cfg.ConnConfig.DialFunc
	if dial == nil {
		d := &net.Dialer{KeepAlive: 5 * time.Minute}
		dial = d.DialContext
	}
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &cutConn{Conn: conn, rc: rc}, nil
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// The intent's commit landed but its answer was lost (the connection was
// reset, a pooler or the primary went away at that moment): hoox sent
// nothing to the venue and answers 503 "nothing was placed" — the answer
// that promises "resend" (README, "What each answer promises"; FAILOVER.md:
// "a signal in flight when the primary died is rolled back (503, the
// resend executes it)"). But the intent it could not confirm stays open
// with a sent_at, so the resend takes it for a dead attempt that may have
// reached the venue: on a venue that may fill a late request (Binance spot,
// memVenue here) the resend never executes — it reconciles, and the trace
// ends failed as a missed trade. hoox knew nothing was sent: the attempt
// should close the intent it may have written (unsent, at the attempts it
// would hold) before its claim rolls back, so the resend executes.
func TestLostIntentCommitAnswerDoesNotTurnTheResendIntoAMissedTrade(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	venue := &memVenue{} // Binance spot's rules: no late refusal, IDs freed once filled
	rc := &replyCutter{}
	pool := pgtest.OpenPool(t, url)
	svc := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: pool, MarkerPool: cuttingPool(t, url, rc),
		Jobs: &jobRecorder{}, Venues: exchange.NewRegistry(map[string]exchange.Venue{"mem": venue})})
	t.Cleanup(svc.Close)
	ctx := context.Background()
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"intent-ack-lost"}`

	// The intent write's Bind carries the trace ID: cut its answer.
	rc.arm("intent-ack-lost")
	_, err := svc.Execute(ctx, input(t, body))
	ge := requireCode(t, err, codes.Unavailable)
	require.Contains(t, ge.Detail, "nothing was placed")
	require.Zero(t, venue.count(), "nothing reached the venue")
	t.Logf("first answer: 503 %q; open intents: %d", ge.Detail,
		count(t, pool, "SELECT count(*) FROM dispatch_intents WHERE outcome IS NULL"))

	// TradingView resends the 503 a few seconds later.
	out, err := svc.Execute(ctx, input(t, body))
	require.NoError(t, err, "the resend of a 503 'nothing was placed' executes")
	require.Equal(t, db.TraceDispatched, out.Status,
		"the resend of a signal answered 'nothing was placed' must place it, not reconcile a send that never happened")
	require.Equal(t, 1, venue.count(), "one order at the venue")
}

// The leg's arming (db.MarkLegSent) committed but its answer was lost: the
// pass stops before the venue ("nothing reached the venue"), yet the leg
// stays armed with a sent_at. The sweeper's next pass takes it for a send
// that may have reached Binance spot, finds nothing, and ends the leg
// failed as a missed trade: a part of the strategy's close is never sold,
// though hoox knew it never sent it. The pass should disarm the leg it may
// have armed (db.MarkLegUnsent at the attempts it would hold) when the
// arming's outcome is unknown.
func TestLostLegArmingAnswerDoesNotMakeTheLegAMissedTrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	rc := &replyCutter{}
	pool := pgtest.OpenPool(t, url)
	fake := binancefake.New(t, binancefake.Options{})
	bigETH(fake)
	venue, err := binance.New(binance.Config{Market: binance.MarketSpot, APIKey: fake.APIKey(), APISecret: fake.APISecret(), BaseURL: fake.URL})
	require.NoError(t, err)
	reg := exchange.NewRegistryOf(exchange.Entry{Name: "binance", Live: venue})
	svc := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: pool, MarkerPool: cuttingPool(t, url, rc), Venues: reg})
	t.Cleanup(svc.Close)

	fake.SetBalance("ETH", decimal.RequireFromString("230"))
	_, err = db.SetLedger(ctx, pool, db.LedgerKey{Exchange: "binance", Mode: "live", Symbol: "ETHUSDT", Strategy: ""},
		decimal.RequireFromString("230"), "bought before hoox", "admin")
	require.NoError(t, err)

	// The first leg's arming carries its event's name: cut its answer.
	rc.arm(db.EventLegStarted)
	out, err := svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"close","quantity":"1","trace_id":"leg-ack-lost"}`))
	require.NoError(t, err, "the primary is recorded; the legs are left for the sweeper")
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Len(t, fake.Orders(), 1, "only the primary reached the venue")

	sweeper := jobs.NewSweepWorker(pool, jobs.Config{SweepGrace: time.Millisecond}, reg, nil, nil)
	require.Eventually(t, func() bool {
		_, err := sweeper.Sweep(ctx)
		require.NoError(t, err)
		return count(t, pool, `SELECT count(*) FROM order_legs WHERE trace_id = 'k:leg-ack-lost' AND outcome IS NULL`) == 0
	}, 60*time.Second, 100*time.Millisecond)

	rows, err := pool.Query(ctx, `SELECT client_order_id || ' ' || outcome FROM order_legs WHERE trace_id = 'k:leg-ack-lost' ORDER BY seq`)
	require.NoError(t, err)
	legs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	t.Logf("legs: %v; ETH left: %s", legs, fake.Balance("ETH"))
	rows, err = pool.Query(ctx, `SELECT coalesce(detail->>'reason', '') FROM trace_history WHERE trace_id = 'k:leg-ack-lost' AND event = 'leg_failed'`)
	require.NoError(t, err)
	reasons, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	t.Logf("leg_failed: %q", reasons)
	require.Equal(t, 2, count(t, pool, `SELECT count(*) FROM order_legs WHERE trace_id = 'k:leg-ack-lost' AND outcome = 'dispatched'`),
		"both parts of the close are placed: the first leg was never sent")
	require.True(t, fake.Balance("ETH").IsZero(), "sold: %s left", fake.Balance("ETH"))
}

// switchDialer dials normally (0), refuses at once (1), or holds the dial
// until its context ends (2), sending on held each time it holds one.
type switchDialer struct {
	mode atomic.Int32
	held chan struct{}
}

func (d *switchDialer) client(t *testing.T) *http.Client {
	var nd net.Dialer
	tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		switch d.mode.Load() {
		case 1:
			return nil, errors.New("switchDialer: connection refused")
		case 2:
			d.held <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return nd.DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// A sweep whose context ends while a leg's request is still connecting
// (River cancels a running job at HOOX_SHUTDOWN_WAIT on every SIGTERM of a
// rolling deploy, and at its one-minute job timeout): the venue never saw
// the leg (ErrUnreachable), but db.MarkLegUnsent runs on that same ended
// context and cannot commit, so the leg stays armed. The next sweep takes
// it for a send that may have reached Binance spot and ends it failed as a
// missed trade: part of the close is never sold. The disarm must not
// depend on the pass's context (as the gateway's settleIntent does not).
func TestLegCutOffBeforeItsRequestLeftIsNotAMissedTrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, url)
	fake := binancefake.New(t, binancefake.Options{})
	bigETH(fake)
	dialer := &switchDialer{held: make(chan struct{}, 4)}
	venue, err := binance.New(binance.Config{Market: binance.MarketSpot, APIKey: fake.APIKey(), APISecret: fake.APISecret(),
		BaseURL: fake.URL, HTTPClient: dialer.client(t)})
	require.NoError(t, err)
	reg := exchange.NewRegistryOf(exchange.Entry{Name: "binance", Live: venue})
	svc := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: pool, MarkerPool: pgtest.OpenPool(t, url), Venues: reg,
		// Once the primary is answered, the venue cannot be reached: the
		// legs are left unsent for the sweeper.
		AfterVenue: func(string) { dialer.mode.Store(1) }})
	t.Cleanup(svc.Close)

	fake.SetBalance("ETH", decimal.RequireFromString("230"))
	_, err = db.SetLedger(ctx, pool, db.LedgerKey{Exchange: "binance", Mode: "live", Symbol: "ETHUSDT", Strategy: ""},
		decimal.RequireFromString("230"), "bought before hoox", "admin")
	require.NoError(t, err)
	out, err := svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"close","quantity":"1","trace_id":"leg-cut-off"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Len(t, fake.Orders(), 1, "only the primary reached the venue")
	require.Zero(t, count(t, pool, `SELECT count(*) FROM order_legs WHERE trace_id = 'k:leg-cut-off' AND sent_at IS NOT NULL`),
		"the unreachable leg is disarmed")

	// A sweep cut off (shutdown, job timeout) while the leg is connecting.
	dialer.mode.Store(2)
	sweeper := jobs.NewSweepWorker(pool, jobs.Config{SweepGrace: time.Millisecond}, reg, nil, nil)
	sctx, cancel := context.WithCancel(ctx)
	go func() {
		<-dialer.held
		cancel()
	}()
	_, serr := sweeper.Sweep(sctx)
	cancel()
	t.Logf("cut-off sweep: %v; legs armed: %d", serr,
		count(t, pool, `SELECT count(*) FROM order_legs WHERE trace_id = 'k:leg-cut-off' AND sent_at IS NOT NULL`))
	require.Len(t, fake.Orders(), 1, "the cut-off leg never left hoox")

	// The venue is back; sweeps finish the close.
	dialer.mode.Store(0)
	require.Eventually(t, func() bool {
		_, err := sweeper.Sweep(ctx)
		require.NoError(t, err)
		return count(t, pool, `SELECT count(*) FROM order_legs WHERE trace_id = 'k:leg-cut-off' AND outcome IS NULL`) == 0
	}, 60*time.Second, 100*time.Millisecond)
	rows, err := pool.Query(ctx, `SELECT coalesce(detail->>'reason', '') FROM trace_history WHERE trace_id = 'k:leg-cut-off' AND event = 'leg_failed'`)
	require.NoError(t, err)
	reasons, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	t.Logf("leg_failed: %q; ETH left: %s", reasons, fake.Balance("ETH"))
	require.Equal(t, 2, count(t, pool, `SELECT count(*) FROM order_legs WHERE trace_id = 'k:leg-cut-off' AND outcome = 'dispatched'`),
		"both parts of the close are placed")
	require.True(t, fake.Balance("ETH").IsZero(), "sold: %s left", fake.Balance("ETH"))
}
