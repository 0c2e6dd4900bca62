package jobs_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/internal/testfactory"
	"github.com/hoox/hoox/internal/testutil"
	"github.com/hoox/hoox/jobs"
)

// gatedTransport holds the first request until release is closed.
type gatedTransport struct {
	once    sync.Once
	release chan struct{}
	next    http.RoundTripper
}

func (g *gatedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	g.once.Do(func() { <-g.release })
	return g.next.RoundTrip(r)
}

// downTransport is a network path to Bybit that fails (a transient cut, a
// rate limit's refusal); it counts the requests it was given.
type downTransport struct{ tried atomic.Int64 }

func (d *downTransport) RoundTrip(*http.Request) (*http.Response, error) {
	d.tried.Add(1)
	return nil, errors.New("read: connection reset by peer")
}

// countingTransport counts the requests it passes on.
type countingTransport struct {
	tried atomic.Int64
	next  http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.tried.Add(1)
	return c.next.RoundTrip(r)
}

// Two sweeps overlap (a sweep job outlasting the interval; River inserts
// the periodic job regardless) over a dead Bybit attempt first asked over
// an hour after its send (hoox was down). Sweep A asks, Bybit answers "not
// there", and A leaves the intent open for the resend (asked_at set). Sweep
// B listed the intent before A committed, so its copy still says it was
// never answered (Stranded.LeftOpen false); its own ask gets no answer and,
// the send being older than SweepGiveUp, it gave the intent up: the trace
// was created failed, a missed trade, and the signal's resend was a 409
// with nothing at Bybit — what leaving it open was meant to end. Recover
// re-read sent_at under the lock but not asked_at.
func TestAnOverlappingSweepDoesNotGiveUpAnIntentTheOtherLeftOpen(t *testing.T) {
	t.Parallel()
	down := &downTransport{}
	b, o := overlappingSweeps(t, down)
	require.Positive(t, down.tried.Load(), "sweep B asked Bybit under the lock (it did not time out on A's lock)")

	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM dispatch_intents WHERE client_order_id = $1 AND asked_at IS NOT NULL`, o.ClientOrderID),
		"sweep A left the intent open")
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM trace_ids WHERE trace_id = 'k:overlap'`),
		"no trace: the intent stays open for the signal's resend, not a missed trade")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM dispatch_intents WHERE client_order_id = $1 AND outcome IS NULL`, o.ClientOrderID))
	require.Len(t, events(t, b.pool, "k:overlap"), 1, "one event: A's swept left_open")
}

// The same overlap, Bybit answering B "not there" too: B wrote a second
// swept left_open event (and counted it again in hoox_sweeps_total), as if
// it had been the first to leave the intent open.
func TestAnOverlappingSweepWritesNoSecondLeftOpenEvent(t *testing.T) {
	t.Parallel()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	answering := &countingTransport{next: tr}
	b, o := overlappingSweeps(t, answering)
	require.Positive(t, answering.tried.Load(), "sweep B asked Bybit under the lock (it did not time out on A's lock)")

	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM trace_ids WHERE trace_id = 'k:overlap'`))
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM dispatch_intents WHERE client_order_id = $1 AND outcome IS NULL AND asked_at IS NOT NULL`,
		o.ClientOrderID))
	evs := events(t, b.pool, "k:overlap")
	require.Len(t, evs, 1, "one swept left_open event, A's: %v", evs)
	require.Equal(t, true, evs[0].Detail["left_open"])
}

// overlappingSweeps runs sweep A over a dead Bybit attempt sent two hours
// ago, holds A's lookup until sweep B has listed the intent and waits for
// its lock, then lets both finish; B reaches Bybit through bTransport.
func overlappingSweeps(t *testing.T, bTransport http.RoundTripper) (*testBundle, exchange.Order) {
	t.Helper()
	ctx := context.Background()
	b := setup(t)
	clock := testutil.NewClock(time.Now())
	f := bybitfake.New(t, bybitfake.Options{Now: clock.Now, Sleep: clock.Advance})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	gate := &gatedTransport{release: make(chan struct{}), next: tr}
	vA, err := bybit.New(bybit.Config{Market: bybit.MarketLinear, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL,
		HTTPClient: &http.Client{Transport: gate}, Now: clock.Now})
	require.NoError(t, err)
	vB, err := bybit.New(bybit.Config{Market: bybit.MarketLinear, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL,
		HTTPClient: &http.Client{Transport: bTransport}, Now: clock.Now})
	require.NoError(t, err)

	o := exchange.Order{ClientOrderID: "hxbybitoverlapsweep000000000001", Symbol: "BTCUSDT", Action: "buy", Side: "buy",
		OrderType: "market", Quantity: decimal.RequireFromString("0.01")}
	testfactory.Intent(t, b.pool, testfactory.IntentOpts{TraceID: "k:overlap", Exchange: "bybit", Order: o,
		SentAt: time.Now().Add(-2 * time.Hour)})

	swA := jobs.NewSweepWorker(b.pool, jobs.Config{}, exchange.NewRegistry(map[string]exchange.Venue{"bybit": vA}), nil, jobs.NewMetrics(nil))
	swB := jobs.NewSweepWorker(b.pool, jobs.Config{}, exchange.NewRegistry(map[string]exchange.Venue{"bybit": vB}), nil, jobs.NewMetrics(nil))

	aDone := make(chan error, 1)
	go func() { _, err := swA.Sweep(ctx); aDone <- err }()
	// A holds the intent's lock while its lookup waits at the gate.
	require.Eventually(t, func() bool {
		return count(t, b.pool, `SELECT count(*) FROM dispatch_intents WHERE client_order_id = $1 AND
			EXISTS (SELECT 1 FROM pg_locks l JOIN pg_database d ON d.oid = l.database
			        WHERE d.datname = current_database() AND l.locktype = 'advisory' AND l.granted)`, o.ClientOrderID) == 1
	}, 10*time.Second, 5*time.Millisecond)
	bDone := make(chan error, 1)
	go func() { _, err := swB.Sweep(ctx); bDone <- err }()
	// B listed the intent and waits for its lock.
	require.Eventually(t, func() bool {
		return count(t, b.pool, `SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
			WHERE d.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted`) == 1
	}, 10*time.Second, time.Millisecond)
	close(gate.release)
	require.NoError(t, <-aDone)
	require.NoError(t, <-bDone)
	return b, o
}
