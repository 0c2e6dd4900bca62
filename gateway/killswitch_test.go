package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/internal/testutil"
)

// lookupHookVenue is a memVenue that runs onLookup at the start of every
// Lookup: the moment an attempt asks the venue about an earlier attempt's
// order, after its claim has read the kill switch.
type lookupHookVenue struct {
	*memVenue
	onLookup func()
}

func (v *lookupHookVenue) Lookup(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	if v.onLookup != nil {
		v.onLookup()
	}
	return v.memVenue.Lookup(ctx, o)
}

// The claim reads the kill switch once; an attempt that then asks the
// venue about an earlier attempt's order (askFirst, askUnknown, or a
// sizing read: up to HOOX_VENUE_TIMEOUT each) reads it again in its
// intent's write, so an operator who engaged the switch (and was answered
// "engaged") during that lookup sees no order placed after it — as the
// reconcile's re-send (db.TouchIntent) and the legs (db.MarkLegSent) do.
func TestResendAfterALookupDoesNotPlaceUnderAKillSwitchEngagedMeanwhile(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	mem := &memVenue{panicNext: true, refusesLate: true} // window 0: "not found" is proof at once
	venue := &lookupHookVenue{memVenue: mem}
	pool := pgtest.OpenPool(t, url)
	svc := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: pool, MarkerPool: pgtest.OpenPool(t, url), Jobs: &jobRecorder{},
		Venues: exchange.NewRegistry(map[string]exchange.Venue{"mem": venue})})
	t.Cleanup(svc.Close)
	ctx := context.Background()
	const body = `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"halt-during-lookup"}`

	// The first attempt dies in Place before the venue takes anything: its
	// intent stays armed, the claim rolls back.
	require.Panics(t, func() { _, _ = svc.Execute(ctx, input(t, body)) })
	require.Equal(t, 1, count(t, pool, "SELECT count(*) FROM dispatch_intents WHERE outcome IS NULL"))
	require.Zero(t, mem.count())

	// The resend claims (switch released), then asks the venue about the
	// dead attempt's order; meanwhile the operator halts trading.
	engaged := false
	venue.onLookup = func() {
		if !engaged {
			engaged = true
			_, err := db.SetKillSwitch(ctx, pool, true, "exchange incident", "admin")
			require.NoError(t, err)
		}
	}
	_, err := svc.Execute(ctx, input(t, body))
	require.True(t, engaged)
	require.Zero(t, mem.count(), "an order was placed after the kill switch was engaged (and answered) (err: %v)", err)
	requireCode(t, err, codes.KillSwitch)
}

// getHook runs onGet before each GET request it carries: the venue reads
// (symbol rules, balances, positions) an attempt makes between its claim
// and its intent.
type getHook struct {
	next  http.RoundTripper
	onGet func()
}

func (h *getHook) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && h.onGet != nil {
		h.onGet()
	}
	return h.next.RoundTrip(r)
}

// The same for an attempt that reads the venue to size its order: a spot
// close sized from what the strategy holds reads the venue's balance after
// its claim, and an engage answered during that read stops it — its intent
// (and the spot ledger's version) is not written, and nothing is sold.
func TestSizedCloseDoesNotPlaceUnderAKillSwitchEngagedDuringItsVenueReads(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, url)
	fake := binancefake.New(t, binancefake.Options{})
	fake.SetSpotCommission(decimal.Zero)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	hook := &getHook{next: tr}
	v, err := binance.New(binance.Config{Market: binance.MarketSpot, APIKey: fake.APIKey(), APISecret: fake.APISecret(),
		BaseURL: fake.URL, HTTPClient: &http.Client{Transport: hook}})
	require.NoError(t, err)
	svc := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: pool, MarkerPool: pgtest.OpenPool(t, url), Jobs: &jobRecorder{},
		Venues: exchange.NewRegistry(map[string]exchange.Venue{"binance": v})})
	t.Cleanup(svc.Close)
	ctx := context.Background()
	_, err = svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"2","strategy":"half","trace_id":"ks-buy"}`))
	require.NoError(t, err)

	var once sync.Once
	hook.onGet = func() {
		once.Do(func() {
			_, err := db.SetKillSwitch(ctx, pool, true, "exchange incident", "admin")
			require.NoError(t, err)
		})
	}
	_, err = svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"close","quantity":"50","quantity_type":"percent_of_position","strategy":"half","trace_id":"ks-close"}`))
	requireCode(t, err, codes.KillSwitch)
	require.Len(t, fake.Orders(), 1, "only the buy: nothing was sold after the engage")
	require.Zero(t, count(t, pool, "SELECT count(*) FROM dispatch_intents WHERE trace_id = 'ks-close'"))
	require.Zero(t, count(t, pool, "SELECT coalesce(sum(closes), 0) FROM spot_ledger_versions"), "no close took the ledger's version")
}

// The intent's write reads the kill switch (fix-r7), but Binance USDⓈ-M's
// Place then reads the venue again before it sends the order: the
// position (GET /fapi/v2/positionRisk, "read every time"), and, when the
// leverage differs, POST /fapi/v1/leverage — each up to the venue timeout.
// An operator who engages the switch (and is answered "engaged") during
// that read sees the order placed after the answer, exactly the window
// fix-r7 closed for the reads before the intent.
func TestFuturesOrderIsNotPlacedUnderAKillSwitchEngagedDuringPlacesPositionRead(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, url)
	fake := binancefake.New(t, binancefake.Options{})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	hook := &positionHook{next: tr}
	v, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: fake.APIKey(), APISecret: fake.APISecret(),
		BaseURL: fake.URL, HTTPClient: &http.Client{Transport: hook}})
	require.NoError(t, err)
	svc := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: pool, MarkerPool: pgtest.OpenPool(t, url), Jobs: &jobRecorder{},
		Venues: exchange.NewRegistry(map[string]exchange.Venue{"binance-futures": v})})
	t.Cleanup(svc.Close)
	ctx := context.Background()

	var once sync.Once
	engagedAfterIntent := false
	hook.onPosition = func() {
		once.Do(func() {
			// The attempt's intent is already written: this read is inside
			// Place, between the intent's kill-switch reading and the send.
			engagedAfterIntent = count(t, pool, "SELECT count(*) FROM dispatch_intents WHERE trace_id = 'k:ks-place'") == 1
			_, err := db.SetKillSwitch(ctx, pool, true, "exchange incident", "admin")
			require.NoError(t, err)
		})
	}
	_, err = svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"buy","quantity":"1","trace_id":"ks-place"}`))
	require.True(t, engagedAfterIntent, "the switch was engaged during Place's position read, after the intent's write")
	require.Empty(t, fake.Orders(), "an order was sent after the kill switch was engaged and answered (err: %v)", err)
	requireCode(t, err, codes.KillSwitch)
	require.Equal(t, 1, count(t, pool, "SELECT count(*) FROM dispatch_intents WHERE trace_id = 'k:ks-place' AND outcome = 'unsent'"),
		"the send never left: the intent is settled unsent, the key free for the resend after the release")
}

// positionHook runs onPosition before each position read (GET
// …/positionRisk): inside a USDⓈ-M Place, after the intent's write.
type positionHook struct {
	next       http.RoundTripper
	onPosition func()
}

func (h *positionHook) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "positionRisk") && h.onPosition != nil {
		h.onPosition()
	}
	return h.next.RoundTrip(r)
}

// requestHook runs on before each request it carries.
type requestHook struct {
	next http.RoundTripper
	on   func(*http.Request)
}

func (h *requestHook) RoundTrip(r *http.Request) (*http.Response, error) {
	h.on(r)
	return h.next.RoundTrip(r)
}

// The same for a resend that re-arms a dead attempt's intent at Bybit,
// which may still book that attempt's create late: stopped inside Place,
// the send never left, but the intent also stands for the dead attempt's
// send — it stays open for the sweeper, and the 503 kill_switch says an
// earlier attempt's order may exist rather than "nothing was placed".
func TestBybitResendStoppedInsidePlaceByTheKillSwitchKeepsTheEarlierAttemptOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, url)
	clock := testutil.NewClock(time.Now())
	f := bybitfake.New(t, bybitfake.Options{Now: clock.Now, Sleep: clock.Advance})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	var once sync.Once
	engaged := false
	hook := &requestHook{next: tr, on: func(r *http.Request) {
		// The resend's re-arm is written (attempts 2): this position read
		// is inside its Place.
		if r.URL.Path == bybitfake.PathPositions && count(t, pool, "SELECT count(*) FROM dispatch_intents WHERE attempts = 2") == 1 {
			once.Do(func() {
				_, err := db.SetKillSwitch(ctx, pool, true, "exchange incident", "admin")
				require.NoError(t, err)
				engaged = true
			})
		}
	}}
	v, err := bybit.New(bybit.Config{Market: bybit.MarketLinear, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL,
		HTTPClient: &http.Client{Transport: hook}, Now: clock.Now})
	require.NoError(t, err)
	gw := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: pool, MarkerPool: pgtest.OpenPool(t, url),
		Venues: exchange.NewRegistry(map[string]exchange.Venue{"bybit": v}), Jobs: &jobRecorder{}, AfterVenue: crashOnce()})
	t.Cleanup(gw.Close)

	const body = `{"exchange":"bybit","symbol":"BTCUSDT","action":"buy","quantity":"0.01","trace_id":"bybit-ks-resend"}`
	f.InjectPlacements(1, bybitfake.LateInEngine(10*time.Minute))
	executeCrashing(t, gw, input(t, body))
	_, err = pool.Exec(ctx, `UPDATE dispatch_intents SET sent_at = sent_at - interval '1 minute'`)
	require.NoError(t, err)

	_, err = gw.Execute(ctx, input(t, body))
	require.True(t, engaged, "the switch was engaged during the resend's Place, after its re-arm")
	ge := requireCode(t, err, codes.KillSwitch)
	require.Contains(t, ge.Detail, "an earlier attempt of this signal may have placed one")
	require.Equal(t, 1, f.Requests(bybitfake.PathCreate), "only the dead attempt's create: the resend sent nothing")
	require.Equal(t, 1, count(t, pool, "SELECT count(*) FROM dispatch_intents WHERE outcome IS NULL"),
		"the intent stays open: the dead attempt's create may still be booked")
}
