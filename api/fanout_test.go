package api_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/api"
	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/signal"
)

// accountGateway answers per account (the input's exchange): the refusal
// set for it, or dispatched. With together set, each execution waits
// (at most 10 s) until that many have arrived, which only a concurrent
// dispatch achieves; a sequential one is answered unavailable.
type accountGateway struct {
	mu       sync.Mutex
	errs     map[string]error
	inputs   []gateway.Input
	together int
	all      chan struct{}
	// outcomes, when set for an account, is what it dispatched (an order
	// and its legs).
	outcomes map[string]gateway.Outcome
}

func (g *accountGateway) Execute(_ context.Context, in gateway.Input) (*gateway.Outcome, error) {
	g.mu.Lock()
	g.inputs = append(g.inputs, in)
	err := g.errs[in.Signal.Exchange]
	if g.together > 0 && len(g.inputs) == g.together {
		close(g.all)
	}
	g.mu.Unlock()
	if g.together > 0 {
		select {
		case <-g.all:
		case <-time.After(10 * time.Second):
			return nil, &gateway.Error{Code: codes.Unavailable, Detail: "the accounts were not dispatched together"}
		}
	}
	if err != nil {
		return nil, err
	}
	if o, ok := g.outcomes[in.Signal.Exchange]; ok {
		o.TraceID, o.Status, o.ReceivedAt = in.Trace.ID, db.TraceDispatched, time.Now()
		return &o, nil
	}
	return &gateway.Outcome{TraceID: in.Trace.ID, Status: db.TraceDispatched, ReceivedAt: time.Now()}, nil
}

func setupFanOut(t *testing.T, g *accountGateway) *webhookBundle {
	t.Helper()
	reg := exchange.NewRegistryOf(
		exchange.Entry{Name: "paper"},
		exchange.Entry{Name: "binance"},
		exchange.Entry{Name: "main", Venue: "binance"},
		exchange.Entry{Name: "sub1", Venue: "binance"},
		exchange.Entry{Name: "by1", Venue: "bybit"},
	)
	return &webhookBundle{handler: api.New(api.Config{WebhookSecret: webhookSecret}, api.Deps{Gateway: g, Venues: reg}).Handler()}
}

func fanOutAnswers(t *testing.T, r response) []map[string]any {
	t.Helper()
	list, ok := r.json(t)["accounts"].([]any)
	require.True(t, ok, "accounts listed: %s", r.Body)
	out := make([]map[string]any, len(list))
	for i, a := range list {
		out[i] = a.(map[string]any)
	}
	return out
}

const fanOutSignal = `{"secret":"` + webhookSecret + `","accounts":["binance","main","sub1","by1"],"symbol":"BTCUSDT","action":"buy","quantity":"0.5","trace_id":"f1"}`

// Every account is dispatched at once (the fake answers none until all
// four arrived), each under its own trace, and the answer lists them in
// the order sent.
func TestFanOutDispatchesEveryAccountAtOnceUnderItsOwnTrace(t *testing.T) {
	t.Parallel()
	g := &accountGateway{together: 4, all: make(chan struct{})}
	b := setupFanOut(t, g)
	r := b.post(t, webhookRequest{body: fanOutSignal})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	got := fanOutAnswers(t, r)
	require.Len(t, got, 4)
	wantTraces := []string{"k:f1", "@main:k:f1", "@sub1:k:f1", "@by1:k:f1"}
	for i, name := range []string{"binance", "main", "sub1", "by1"} {
		require.Equal(t, name, got[i]["account"])
		require.Equal(t, float64(http.StatusOK), got[i]["status"])
		require.Equal(t, wantTraces[i], got[i]["trace_id"])
		require.Equal(t, wantTraces[i], got[i]["result"].(map[string]any)["trace_id"])
	}
	require.Equal(t, "bybit", got[3]["venue"])
	locks := map[string]bool{}
	for _, in := range g.inputs {
		require.Nil(t, in.Signal.Accounts, "each account executes a single-account signal")
		locks[in.Trace.LockKey] = true
	}
	require.Len(t, locks, 4, "four lock keys, so four client order IDs")
}

// The whole answer's status: 503 as soon as one account can be retried,
// else 200 when one placed, else the accounts' shared refusal, else 422.
func TestFanOutStatusFollowsWhatARetryWouldDo(t *testing.T) {
	t.Parallel()
	unavailable := &gateway.Error{Code: codes.Unavailable, Detail: "venue by1 is unreachable; nothing was placed", RetryAfter: 5 * time.Second}
	killed := &gateway.Error{Code: codes.KillSwitch, Detail: "halted", RetryAfter: time.Minute}
	dup := &gateway.Error{Code: codes.Duplicate, Detail: "already received", Original: &gateway.Original{TraceID: "k:f1", Status: db.TraceDispatched, FirstSeen: time.Now()}}
	rejected := &gateway.Error{Code: codes.OrderRejected, Detail: "venue refused"}
	inProgress := &gateway.Error{Code: codes.InProgress, Detail: "running", RetryAfter: time.Second}
	all := func(err error) map[string]error {
		return map[string]error{"binance": err, "main": err, "sub1": err, "by1": err}
	}
	tests := []struct {
		name       string
		errs       map[string]error
		status     int
		code       string
		retryAfter string
	}{
		{"one unreachable, the others placed", map[string]error{"by1": unavailable}, http.StatusServiceUnavailable, "unavailable", "5"},
		{"one unreachable, one halted, the others repeats", map[string]error{"by1": unavailable, "main": killed, "binance": dup, "sub1": dup}, http.StatusServiceUnavailable, "unavailable", "60"},
		{"all halted", all(killed), http.StatusServiceUnavailable, "kill_switch", "60"},
		{"one refused, the others placed", map[string]error{"sub1": rejected}, http.StatusOK, "", ""},
		{"one placed, the others repeats", map[string]error{"binance": dup, "main": dup, "sub1": dup}, http.StatusOK, "", ""},
		{"all repeats", all(dup), http.StatusConflict, "duplicate", ""},
		{"all refused", all(rejected), http.StatusUnprocessableEntity, "order_rejected", ""},
		{"repeats and one still running", map[string]error{"binance": dup, "main": dup, "sub1": dup, "by1": inProgress}, http.StatusConflict, "in_progress", "1"},
		{"repeats and refusals", map[string]error{"binance": dup, "main": dup, "sub1": rejected, "by1": rejected}, http.StatusUnprocessableEntity, "accounts_refused", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupFanOut(t, &accountGateway{errs: tc.errs})
			r := b.post(t, webhookRequest{body: fanOutSignal})
			require.Equal(t, tc.status, r.Status, string(r.Body))
			require.Equal(t, tc.retryAfter, r.Header.Get("Retry-After"))
			if tc.code != "" {
				require.Equal(t, "application/problem+json", r.Header.Get("Content-Type"))
				require.Equal(t, tc.code, r.json(t)["code"])
			}
			got := fanOutAnswers(t, r)
			for _, a := range got {
				err, refused := tc.errs[a["account"].(string)]
				if !refused {
					require.Equal(t, float64(http.StatusOK), a["status"], a["account"])
					continue
				}
				require.Equal(t, err.(*gateway.Error).Code, a["problem"].(map[string]any)["code"], a["account"])
			}
		})
	}
}

// One account alone answers as a single signal does, on that account's
// trace; exchange must agree with the account's venue.
func TestOneAccountAnswersAsASingleSignal(t *testing.T) {
	t.Parallel()
	g := &accountGateway{errs: map[string]error{}}
	b := setupFanOut(t, g)
	r := b.post(t, webhookRequest{body: `{"secret":"` + webhookSecret + `","exchange":"binance","account":"Sub1","symbol":"BTCUSDT","action":"buy","quantity":"0.5","trace_id":"one"}`})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, "@sub1:k:one", r.json(t)["trace_id"])
	require.NotContains(t, r.json(t), "accounts")
	require.Equal(t, "sub1", g.inputs[0].Signal.Exchange)
	// exchange naming the account is the same unit, not the default
	// account's "k:one".
	r = b.post(t, webhookRequest{body: `{"secret":"` + webhookSecret + `","exchange":"sub1","symbol":"BTCUSDT","action":"buy","quantity":"0.5","trace_id":"one"}`})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, "@sub1:k:one", r.json(t)["trace_id"])
	require.Equal(t, g.inputs[0].Trace, g.inputs[1].Trace)
	require.Equal(t, g.inputs[0].Signal.Fingerprint(), g.inputs[1].Signal.Fingerprint())

	for body, says := range map[string]string{
		`"exchange":"bybit","account":"sub1"`: `account: account "sub1" trades on binance, but exchange says bybit`,
		`"account":"ghost"`:                   `account: "ghost" is not a configured account`,
		`"accounts":["main","ghost"]`:         `accounts: "ghost" is not a configured account (configured: binance, by1, main, paper, sub1)`,
	} {
		r := b.post(t, webhookRequest{body: `{"secret":"` + webhookSecret + `",` + body + `,"symbol":"BTCUSDT","action":"buy","quantity":"0.5"}`})
		require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
		require.Contains(t, r.json(t)["detail"], says)
	}
	require.Len(t, g.inputs, 2, "a refused signal executes on no account")
}

// A fan-out's traces through the real gateway: the trace page shows each
// one's account and links to the signal on every account; the admin API
// shows the account and lists the fan-out together.
func TestFanOutTracesShowTheirAccountAndAreFoundTogether(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{adminToken: adminToken, paper2: true})
	send := func(key string) response {
		return do(t, b.handler, http.MethodPost, "/webhook", "", `{"secret":"`+webhookSecret+`","accounts":["paper","paper2"],"symbol":"BTCUSDT","action":"buy","quantity":"0.01","trace_id":"`+key+`"}`)
	}
	require.Equal(t, http.StatusOK, send("ui-fan").Status)
	require.Equal(t, http.StatusOK, send("other").Status)

	br := newBrowser(t, b.handler)
	br.login(adminToken)
	page := string(br.get("/ui/trace/@paper2:k:ui-fan").Body)
	require.Contains(t, page, `<dd id="trace-account">paper2 (on paper)</dd>`)
	require.Contains(t, page, `href="/ui/?fanout=k%3aui-fan"`)
	require.Contains(t, string(br.get("/ui/trace/k:ui-fan").Body), `<dd id="trace-account">paper</dd>`)
	list := string(br.get("/ui/?fanout=k:ui-fan").Body)
	require.Contains(t, list, `data-id="k:ui-fan"`)
	require.Contains(t, list, `data-id="@paper2:k:ui-fan"`)
	require.NotContains(t, list, "k:other")

	traces := do(t, b.handler, http.MethodGet, "/admin/traces?fanout=@paper2:k:ui-fan", adminToken, "")
	require.Equal(t, http.StatusOK, traces.Status, string(traces.Body))
	accounts := map[string]string{}
	for _, tr := range traces.json(t)["traces"].([]any) {
		tr := tr.(map[string]any)
		accounts[tr["trace_id"].(string)] = tr["account"].(string)
	}
	require.Equal(t, map[string]string{"k:ui-fan": "paper", "@paper2:k:ui-fan": "paper2"}, accounts)
	orders := do(t, b.handler, http.MethodGet, "/admin/orders?fanout=k:ui-fan", adminToken, "")
	require.Equal(t, http.StatusOK, orders.Status, string(orders.Body))
	require.Len(t, orders.json(t)["orders"], 2)
}

// A cancel fanned out to accounts cancels each account's own open orders
// and lists them in that account's answer; a cancel on one account leaves
// the other account's orders open.
func TestCancelOnEachAccount(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{adminToken: adminToken, paper2: true})
	send := func(body string) response {
		return do(t, b.handler, http.MethodPost, "/webhook", "", `{"secret":"`+webhookSecret+`",`+body+`}`)
	}
	r := send(`"accounts":["paper","paper2"],"symbol":"BTCUSDT","action":"buy","quantity":"0.01","price":"80","trace_id":"rest"`)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))

	one := send(`"account":"paper2","symbol":"BTCUSDT","action":"cancel","trace_id":"c-one"`)
	require.Equal(t, http.StatusOK, one.Status, string(one.Body))
	require.Len(t, one.json(t)["cancelled"], 1)
	var open int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM orders WHERE status = 'open' AND exchange = 'paper'`).Scan(&open))
	require.Equal(t, 1, open, "the other account's order is left alone")

	all := send(`"accounts":["paper","paper2"],"symbol":"BTCUSDT","action":"cancel","trace_id":"c-all"`)
	require.Equal(t, http.StatusOK, all.Status, string(all.Body))
	got := map[string]int{}
	for _, a := range all.json(t)["accounts"].([]any) {
		a := a.(map[string]any)
		got[a["account"].(string)] = len(a["result"].(map[string]any)["cancelled"].([]any))
	}
	require.Equal(t, map[string]int{"paper": 1, "paper2": 0}, got, "each account lists its own")
}

// An account whose entry placed exits as legs (a Bybit trailing stop, the
// position's setting) lists them in its result as the single answer does:
// the legs in orders, their exits in attached.
func TestFanOutResultListsAnAccountsExitLegs(t *testing.T) {
	t.Parallel()
	entry := db.OrderRow{ClientOrderID: "hxentry", Exchange: "by1", Symbol: "BTCUSDT", Side: "buy", OrderType: "market",
		Status: "filled", Role: exchange.RolePrimary}
	leg := db.OrderRow{ClientOrderID: "hxtrail", Exchange: "by1", Symbol: "BTCUSDT", Side: "sell", OrderType: "market",
		Status: "open", Role: exchange.RoleTrailingStop, TrailingDistance: decimal.NewNullDecimal(decimal.RequireFromString("600"))}
	g := &accountGateway{outcomes: map[string]gateway.Outcome{"by1": {Order: &entry, Legs: []db.OrderRow{leg}}}}
	b := setupFanOut(t, g)
	r := b.post(t, webhookRequest{body: fanOutSignal})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	result := fanOutAnswers(t, r)[3]["result"].(map[string]any)
	require.Equal(t, []any{map[string]any{"role": "trailing_stop", "trailing_distance": "600", "status": "placed", "client_order_id": "hxtrail"}},
		result["attached"], string(r.Body))
	orders, _ := result["orders"].([]any)
	require.Len(t, orders, 2, string(r.Body))
	require.Equal(t, "hxtrail", orders[1].(map[string]any)["client_order_id"])
}

// A client key over the default accounts of two venues would give both
// executions the same trace and lock key ("k:<key>": a client key names no
// venue, and a default account's trace is the signal's own), so the second
// would be refused as the first's key_reused and never execute. The signal
// is refused whole, before anything executes.
func TestFanOutOfOneClientKeyOverTwoVenuesDefaultAccountsIsRefused(t *testing.T) {
	t.Parallel()
	g := &accountGateway{}
	reg := exchange.NewRegistryOf(exchange.Entry{Name: "paper"}, exchange.Entry{Name: "binance"}, exchange.Entry{Name: "bybit"})
	b := &webhookBundle{handler: api.New(api.Config{WebhookSecret: webhookSecret}, api.Deps{Gateway: g, Venues: reg}).Handler()}
	r := b.post(t, webhookRequest{body: `{"secret":"` + webhookSecret + `","accounts":["binance","bybit"],"symbol":"BTCUSDT","action":"buy","quantity":"0.5","trace_id":"f9"}`})
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	require.Equal(t, codes.InvalidSignal, r.json(t)["code"])
	require.Contains(t, r.json(t)["detail"], "would share the trace k:f9")
	require.Empty(t, g.inputs, "nothing executed")

	// The same fan-out without a client key derives a trace per venue.
	r = b.post(t, webhookRequest{body: `{"secret":"` + webhookSecret + `","accounts":["binance","bybit"],"symbol":"BTCUSDT","action":"buy","quantity":"0.5","timestamp":"2026-12-04T20:00:00Z"}`})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Len(t, g.inputs, 2)
	require.NotEqual(t, g.inputs[0].Trace.LockKey, g.inputs[1].Trace.LockKey)
}

// A fan-out's resend must find the accounts already executed, so its
// trace must outlive the resend: a client key (trace_id or the
// Idempotency-Key header) or a timestamp. One with neither (a window
// trace, a repeat only inside HOOX_DEDUP_WINDOW) is refused before
// anything executes; "account" alone is a single signal and is not.
func TestFanOutNeedsAKeyOrATimestamp(t *testing.T) {
	t.Parallel()
	g := &accountGateway{errs: map[string]error{}}
	b := setupFanOut(t, g)
	const order = `"symbol":"BTCUSDT","action":"buy","quantity":"0.5"`
	for _, accounts := range []string{`["main","sub1"]`, `["main"]`} {
		r := b.post(t, webhookRequest{body: `{"secret":"` + webhookSecret + `","accounts":` + accounts + `,` + order + `}`})
		require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
		require.Equal(t, codes.InvalidSignal, r.json(t)["code"])
		require.Contains(t, r.json(t)["detail"], `accounts: a fan-out needs trace_id or timestamp (e.g. "timestamp": "{{timenow}}"`)
	}
	require.Empty(t, g.inputs, "nothing executed")

	for _, req := range []webhookRequest{
		{body: `{"secret":"` + webhookSecret + `","accounts":["main","sub1"],` + order + `,"trace_id":"fk1"}`},
		{body: `{"secret":"` + webhookSecret + `","accounts":["main","sub1"],` + order + `}`, headers: []string{"Idempotency-Key", "fk2"}},
		{body: `{"secret":"` + webhookSecret + `","accounts":["main","sub1"],` + order + `,"timestamp":"2026-12-04T20:00:00Z"}`},
		{body: `{"secret":"` + webhookSecret + `","account":"main",` + order + `}`},
	} {
		r := b.post(t, req)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	}
	require.Len(t, g.inputs, 7)
	require.Equal(t, signal.KeyWindow, g.inputs[6].Trace.Source, "a single account's signal keeps its window")
}

// Every account still running: the whole answer is 409 in_progress with
// the accounts' own Retry-After, as a single signal's in_progress has.
func TestFanOutAllInProgressCarriesRetryAfter(t *testing.T) {
	t.Parallel()
	inProgress := &gateway.Error{Code: codes.InProgress, Detail: "running", RetryAfter: 2 * time.Second}
	b := setupFanOut(t, &accountGateway{errs: map[string]error{"binance": inProgress, "main": inProgress, "sub1": inProgress, "by1": inProgress}})
	r := b.post(t, webhookRequest{body: fanOutSignal})
	require.Equal(t, http.StatusConflict, r.Status, string(r.Body))
	require.Equal(t, codes.InProgress, r.json(t)["code"])
	require.Equal(t, "2", r.Header.Get("Retry-After"))
}
