package app_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/exchange/venuefake"
	"github.com/hoox/hoox/internal/app"
	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/signal"
)

// fanOutRig is a hoox with three named accounts beside the built-in
// paper: two on Binance spot (two fakes, as two sub-accounts with their
// own keys and books) and one on Bybit linear.
type fanOutRig struct {
	b                  *apptest.Bundle
	main, sub1, bybit1 venuefake.Fake
}

func startFanOutRig(t *testing.T) fanOutRig {
	t.Helper()
	startBinance := func(key, secret string) venuefake.Fake {
		s, err := binancefake.Start("127.0.0.1:0", binancefake.Options{APIKey: key, APISecret: secret})
		require.NoError(t, err)
		t.Cleanup(s.Close)
		return s.Venue(binancefake.MarketSpot)
	}
	by, err := bybitfake.Start("127.0.0.1:0", bybitfake.Options{APIKey: "KEYbybit1e8b", APISecret: "SECRETbybit1e8b"})
	require.NoError(t, err)
	t.Cleanup(by.Close)
	r := fanOutRig{main: startBinance("KEYmain7f3a", "SECRETmain7f3a"), sub1: startBinance("KEYsub19c2d", "SECRETsub19c2d"), bybit1: by.Venue(bybitfake.CategoryLinear)}
	account := func(name, venue string, f venuefake.Fake) app.AccountSettings {
		return app.AccountSettings{Name: name, Venue: venue, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL()}
	}
	r.b = apptest.Setup(t, func(c *app.Config) {
		c.Accounts = []app.AccountSettings{account("main", "binance", r.main), account("sub1", "binance", r.sub1), account("bybit1", "bybit", r.bybit1)}
	})
	return r
}

// answers indexes a fan-out answer's accounts by name.
func answers(t *testing.T, r apptest.Reply) map[string]map[string]any {
	t.Helper()
	list, ok := r.Body["accounts"].([]any)
	require.True(t, ok, "the answer lists the accounts: %s", r.Raw)
	out := map[string]map[string]any{}
	for _, a := range list {
		m := a.(map[string]any)
		out[m["account"].(string)] = m
	}
	return out
}

func statusOf(a map[string]any) int { return int(a["status"].(float64)) }

func problemCode(a map[string]any) string {
	p, _ := a["problem"].(map[string]any)
	s, _ := p["code"].(string)
	return s
}

const fanOutBody = `{"secret":"` + apptest.Secret + `","accounts":["paper","main","sub1","bybit1"],"symbol":"BTCUSDT","action":"buy","quantity":"0.002","trace_id":"fan-1"}`

// One account's venue is down: the others place at once, the answer is a
// 503 that says which account to retry for, and the resend places only
// the missing order — the others answer as repeats.
func TestFanOutOneVenueDownDoesNotStopTheOthersAndTheRetryPlacesOnlyIt(t *testing.T) {
	t.Parallel()
	r := startFanOutRig(t)
	r.b.App.Paper().SetFaults(paper.Faults{Unreachable: true})

	first := apptest.Post(t, r.b.URL, fanOutBody)
	require.Equal(t, http.StatusServiceUnavailable, first.Status, first.Raw)
	require.Equal(t, "unavailable", first.Str("code"))
	require.NotEmpty(t, first.Header.Get("Retry-After"))
	got := answers(t, first)
	require.Equal(t, http.StatusServiceUnavailable, statusOf(got["paper"]))
	require.Equal(t, "unavailable", problemCode(got["paper"]))
	for _, name := range []string{"main", "sub1", "bybit1"} {
		require.Equal(t, http.StatusOK, statusOf(got[name]), name)
		require.Equal(t, "dispatched", got[name]["result"].(map[string]any)["status"], name)
	}
	require.Equal(t, "k:fan-1", got["paper"]["trace_id"])
	require.Equal(t, "@main:k:fan-1", got["main"]["trace_id"])
	require.Equal(t, "binance", got["sub1"]["venue"])
	for _, f := range []venuefake.Fake{r.main, r.sub1, r.bybit1} {
		require.Len(t, f.Orders(), 1)
	}
	require.NotEqual(t, r.main.Orders()[0].ClientOrderID, r.sub1.Orders()[0].ClientOrderID, "each account its own client order ID")
	require.Equal(t, 0, apptest.Fills(t, r.b.Pool))

	r.b.App.Paper().SetFaults(paper.Faults{})
	retry := apptest.Post(t, r.b.URL, fanOutBody)
	require.Equal(t, http.StatusOK, retry.Status, retry.Raw)
	got = answers(t, retry)
	require.Equal(t, http.StatusOK, statusOf(got["paper"]))
	for _, name := range []string{"main", "sub1", "bybit1"} {
		require.Equal(t, http.StatusConflict, statusOf(got[name]), name)
		require.Equal(t, "duplicate", problemCode(got[name]), name)
	}
	require.Equal(t, 1, apptest.Fills(t, r.b.Pool))

	again := apptest.Post(t, r.b.URL, fanOutBody)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	require.Equal(t, "duplicate", again.Str("code"))
	for _, f := range []venuefake.Fake{r.main, r.sub1, r.bybit1} {
		require.Len(t, f.Orders(), 1, "nothing placed twice")
	}
	require.Equal(t, 1, apptest.Fills(t, r.b.Pool))
	require.Equal(t, 4, apptest.Count(t, r.b.Pool, "SELECT count(*) FROM orders"))
	require.Equal(t, 4, apptest.Count(t, r.b.Pool, "SELECT count(DISTINCT exchange) FROM orders"), "each order under its account")
}

// One account's venue refuses the order for good: the others are placed,
// the answer is a 200 that shows the refusal, and a resend places nothing.
func TestFanOutOneRefusalDoesNotBlockTheOthers(t *testing.T) {
	t.Parallel()
	r := startFanOutRig(t)
	r.sub1.Inject(venuefake.RefuseInsufficientBalance)
	first := apptest.Post(t, r.b.URL, fanOutBody)
	require.Equal(t, http.StatusOK, first.Status, first.Raw)
	got := answers(t, first)
	require.Equal(t, http.StatusUnprocessableEntity, statusOf(got["sub1"]))
	require.Equal(t, "order_rejected", problemCode(got["sub1"]))
	require.Equal(t, http.StatusOK, statusOf(got["main"]))
	require.Len(t, r.main.Orders(), 1)
	require.Empty(t, r.sub1.Orders())

	again := apptest.Post(t, r.b.URL, fanOutBody)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	require.Equal(t, "duplicate", again.Str("code"), "every account already has its outcome")
	require.Len(t, r.main.Orders(), 1)
	require.Empty(t, r.sub1.Orders())
}

// A resend that adds an account places only on it; "account" alone is
// the same unit as that account in a list.
func TestFanOutResendWithAnAddedAccountPlacesOnlyThere(t *testing.T) {
	t.Parallel()
	r := startFanOutRig(t)
	one := `{"secret":"` + apptest.Secret + `","account":"main","symbol":"BTCUSDT","action":"buy","quantity":"0.002","trace_id":"grow"}`
	single := apptest.Post(t, r.b.URL, one)
	require.Equal(t, http.StatusOK, single.Status, single.Raw)
	require.Equal(t, "@main:k:grow", single.Str("trace_id"), "one account answers as a single signal")
	require.Equal(t, "main", single.Str("order", "exchange"))

	both := `{"secret":"` + apptest.Secret + `","exchange":"binance","accounts":["main","sub1"],"symbol":"BTCUSDT","action":"buy","quantity":"0.002","trace_id":"grow"}`
	r2 := apptest.Post(t, r.b.URL, both)
	require.Equal(t, http.StatusOK, r2.Status, r2.Raw)
	got := answers(t, r2)
	require.Equal(t, http.StatusConflict, statusOf(got["main"]))
	require.Equal(t, http.StatusOK, statusOf(got["sub1"]))
	require.Len(t, r.main.Orders(), 1)
	require.Len(t, r.sub1.Orders(), 1)
}

func TestFanOutRefusesBadAccountsBeforeAnything(t *testing.T) {
	t.Parallel()
	r := startFanOutRig(t)
	for body, says := range map[string]string{
		`"accounts":["main","nobody"]`:                             `accounts: "nobody" is not a configured account`,
		`"exchange":"bybit","accounts":["main"]`:                   `accounts: account "main" trades on binance, but exchange says bybit`,
		`"exchange":"sub1","account":"bybit1"`:                     `account: account "bybit1" trades on bybit, but exchange says binance`,
		`"accounts":["a","b","c","d","e","f","g","h","i","j","k"]`: "must name 1–10 accounts",
	} {
		reply := apptest.Post(t, r.b.URL, `{"secret":"`+apptest.Secret+`",`+body+`,"symbol":"BTCUSDT","action":"buy","quantity":"0.002"}`)
		require.Equal(t, http.StatusBadRequest, reply.Status, reply.Raw)
		require.Equal(t, "invalid_signal", reply.Str("code"))
		require.Contains(t, reply.Str("detail"), says)
	}
	require.Zero(t, apptest.Count(t, r.b.Pool, "SELECT count(*) FROM trace_ids"))
	for _, f := range []venuefake.Fake{r.main, r.sub1, r.bybit1} {
		require.Empty(t, f.Orders())
	}
}

// The accounts' keys and secrets reach no log line, stored row, answer,
// admin API page or metric, whatever the signals met.
func TestAccountCredentialsNeverLeave(t *testing.T) {
	t.Parallel()
	r := startFanOutRig(t)
	r.sub1.Inject(venuefake.RefuseInsufficientBalance)
	accept := r.bybit1.RefuseCredentials()
	var bodies []string
	first := apptest.Post(t, r.b.URL, fanOutBody)
	require.Equal(t, http.StatusServiceUnavailable, first.Status, first.Raw)
	require.Equal(t, "unavailable", problemCode(answers(t, first)["bybit1"]), "the refused key is an outage: nothing placed, retry")
	accept()
	second := apptest.Post(t, r.b.URL, fanOutBody)
	require.Equal(t, http.StatusOK, second.Status, second.Raw)
	bodies = append(bodies, first.Raw, second.Raw)
	get := func(path string) string {
		req, err := http.NewRequest(http.MethodGet, r.b.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+apptest.AdminToken)
		resp, err := apptest.Client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		return string(b)
	}
	bodies = append(bodies, get("/admin/traces"), get("/admin/orders"), get("/admin/traces/@sub1:k:fan-1"), get("/metrics"))
	var dump string
	require.NoError(t, r.b.Pool.QueryRow(context.Background(), `
		SELECT concat_ws(' ',
			(SELECT json_agg(t) FROM trace_ids t), (SELECT json_agg(o) FROM orders o),
			(SELECT json_agg(e) FROM trace_history e), (SELECT json_agg(i) FROM dispatch_intents i),
			(SELECT json_agg(j) FROM river_job j))`).Scan(&dump))
	require.Contains(t, dump, "@sub1:k:fan-1")
	everything := strings.Join(append(bodies, dump, r.b.Logs.String()), "\n")
	require.Contains(t, everything, "bybit1", "the account is named")
	for _, f := range []venuefake.Fake{r.main, r.sub1, r.bybit1} {
		require.NotContains(t, everything, f.APIKey())
		require.NotContains(t, everything, f.APISecret())
	}
}

// Without a client key the accounts dedup as single signals do, by the
// derived trace of the signal's timestamp: a resend is a repeat on every
// account.
func TestFanOutDerivedSignalsRepeatOnEveryAccount(t *testing.T) {
	t.Parallel()
	r := startFanOutRig(t)
	body := `{"secret":"` + apptest.Secret + `","accounts":["main","sub1"],"symbol":"BTCUSDT","action":"buy","quantity":"0.002","timestamp":"2026-01-02T03:04:05Z"}`
	first := apptest.Post(t, r.b.URL, body)
	require.Equal(t, http.StatusOK, first.Status, first.Raw)
	got := answers(t, first)
	require.NotEqual(t, got["main"]["trace_id"], got["sub1"]["trace_id"])
	again := apptest.Post(t, r.b.URL, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	require.Equal(t, "duplicate", again.Str("code"))
	require.Len(t, r.main.Orders(), 1)
	require.Len(t, r.sub1.Orders(), 1)
}

// A fan-out's 503 asks for the whole signal again, the accounts already
// executed answering as repeats. A signal with neither trace_id nor
// timestamp is a repeat only inside HOOX_DEDUP_WINDOW, which a resend
// after the answer's Retry-After (a kill switch's is 60 s, the default
// window) or a relay's backoff outlives: every account that had placed
// would place again. So a fan-out needs a key or a timestamp, and one
// without is refused before anything executes; a single account's signal
// (its 503 placed nothing) is not.
func TestFanOutWithoutKeyOrTimestampIsRefusedBeforeAnything(t *testing.T) {
	t.Parallel()
	r := startFanOutRig(t)
	r.b.App.Paper().SetFaults(paper.Faults{Unreachable: true})
	reply := apptest.Post(t, r.b.URL, `{"secret":"`+apptest.Secret+`","accounts":["paper","main"],"symbol":"BTCUSDT","action":"buy","quantity":"0.002","comment":"window fan-out"}`)
	require.Equal(t, http.StatusBadRequest, reply.Status, reply.Raw)
	require.Equal(t, "invalid_signal", reply.Str("code"))
	require.Contains(t, reply.Str("detail"), "a fan-out needs trace_id or timestamp")
	require.Contains(t, reply.Str("detail"), `"timestamp": "{{timenow}}"`)
	require.Empty(t, r.main.Orders(), "nothing executed")
	require.Zero(t, apptest.Count(t, r.b.Pool, "SELECT count(*) FROM trace_ids"))

	single := apptest.Post(t, r.b.URL, `{"secret":"`+apptest.Secret+`","account":"main","symbol":"BTCUSDT","action":"buy","quantity":"0.002","comment":"window single"}`)
	require.Equal(t, http.StatusOK, single.Status, single.Raw)
	require.Len(t, r.main.Orders(), 1)
}

// A fan-out with a timestamp keeps its traces for HOOX_TRACE_TTL: its
// 503 (one account's venue down) asks for a resend after Retry-After, and
// a resend that arrives past both that and HOOX_DEDUP_WINDOW places only
// the missing account. (The traces are aged past both rather than slept
// on.)
func TestFanOutWithTimestampResentAfterItsRetryAfterPlacesOnlyTheMissingAccount(t *testing.T) {
	t.Parallel()
	r := startFanOutRig(t)
	r.b.App.Paper().SetFaults(paper.Faults{Unreachable: true})
	body := `{"secret":"` + apptest.Secret + `","accounts":["paper","main"],"symbol":"BTCUSDT","action":"buy","quantity":"0.002","timestamp":"2026-01-02T03:04:05Z"}`

	first := apptest.Post(t, r.b.URL, body)
	require.Equal(t, http.StatusServiceUnavailable, first.Status, first.Raw)
	require.Equal(t, "unavailable", first.Str("code"))
	require.Equal(t, http.StatusOK, statusOf(answers(t, first)["main"]), "main placed")
	require.Len(t, r.main.Orders(), 1)
	retry, err := strconv.Atoi(first.Header.Get("Retry-After"))
	require.NoError(t, err)
	ageTraces(t, r.b, max(time.Duration(retry)*time.Second, app.DefaultConfig().Gateway.DedupWindow)+time.Second)

	r.b.App.Paper().SetFaults(paper.Faults{})
	again := apptest.Post(t, r.b.URL, body)
	require.Equal(t, http.StatusOK, again.Status, again.Raw)
	got := answers(t, again)
	require.Equal(t, http.StatusOK, statusOf(got["paper"]), "the missing account places")
	require.Equal(t, http.StatusConflict, statusOf(got["main"]), "main answers as a repeat")
	require.Len(t, r.main.Orders(), 1, "no second order on main")
	require.Equal(t, 1, apptest.Fills(t, r.b.Pool))
}

// The kill switch is engaged while a fan-out with a timestamp runs: one
// account ("main") already placed, the other ("paper") claims after the
// switch. The answer is a 503 kill_switch with Retry-After: 60; the
// operator releases the switch and the sender resends after it, past the
// default 60 s window: main answers as a repeat, paper places. (Paper's
// claim is held back by holding its lock key from a test connection, only
// to order the two claims around the switch; the traces are aged past the
// Retry-After rather than slept on.)
func TestFanOutKillSwitchResendAfterItsRetryAfterPlacesOnlyTheMissingAccount(t *testing.T) {
	t.Parallel()
	r := startFanOutRig(t)
	body := `{"secret":"` + apptest.Secret + `","accounts":["paper","main"],"symbol":"BTCUSDT","action":"buy","quantity":"0.002","timestamp":"2026-01-02T03:04:06Z"}`
	raw, err := signal.Decode([]byte(body))
	require.NoError(t, err)
	sig, err := raw.Signal()
	require.NoError(t, err)
	tr, err := signal.DeriveAccountTrace(sig, "paper", "paper", "", time.Now())
	require.NoError(t, err)

	ctx := context.Background()
	conn, err := r.b.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, "SELECT pg_advisory_lock(hashtextextended($1, 0))", tr.LockKey)
	require.NoError(t, err)

	done := make(chan apptest.Reply, 1)
	go func() { done <- apptest.Post(t, r.b.URL, body) }()
	require.Eventually(t, func() bool { return len(r.main.Orders()) == 1 }, 5*time.Second, 5*time.Millisecond, "main placed")
	_, err = db.SetKillSwitch(ctx, r.b.Pool, true, "operator halts trading", "test")
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "SELECT pg_advisory_unlock(hashtextextended($1, 0))", tr.LockKey)
	require.NoError(t, err)
	first := <-done
	require.Equal(t, http.StatusServiceUnavailable, first.Status, first.Raw)
	require.Equal(t, "kill_switch", first.Str("code"))
	require.Equal(t, "kill_switch", problemCode(answers(t, first)["paper"]))
	retry, err := strconv.Atoi(first.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.Equal(t, 60, retry)

	_, err = db.SetKillSwitch(ctx, r.b.Pool, false, "released", "test")
	require.NoError(t, err)
	ageTraces(t, r.b, time.Duration(retry)*time.Second+time.Second)
	again := apptest.Post(t, r.b.URL, body)
	require.Equal(t, http.StatusOK, again.Status, again.Raw)
	got := answers(t, again)
	require.Equal(t, http.StatusOK, statusOf(got["paper"]), "the halted account places")
	require.Equal(t, http.StatusConflict, statusOf(got["main"]), "main answers as a repeat")
	require.Len(t, r.main.Orders(), 1, "no second order on main")
}

// ageTraces moves every trace's arrival d into the past, as a resend that
// waited d would find it.
func ageTraces(t *testing.T, b *apptest.Bundle, d time.Duration) {
	t.Helper()
	_, err := b.Pool.Exec(context.Background(), "UPDATE trace_ids SET received_at = received_at - $1::bigint * interval '1 millisecond'", d.Milliseconds())
	require.NoError(t, err)
}
