package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
)

// fakeOrder is one order a fake venue accepted, in the words the tests need.
type fakeOrder struct {
	ClientOrderID   string
	ExchangeOrderID string
	Symbol          string
}

// fakeVenue is what the whole-gateway tests need from a venue's fake: where
// it listens, what it holds, and the faults a real venue produces. Each
// method maps onto the fake's own API; nothing here imitates a venue.
type fakeVenue interface {
	URL() string
	Key() string
	Secret() string
	// Orders are the orders the fake accepted in this venue's market or
	// category, oldest first.
	Orders() []fakeOrder
	// ServerErrorAfterAccept books the next placement, then answers 5xx.
	ServerErrorAfterAccept()
	// HangAfterAccept books the next placement and answers nothing until
	// the client gives up.
	HangAfterAccept()
	// LagNextLookup hides the next placement from order queries for d.
	LagNextLookup(d time.Duration)
	// RefuseCredentials makes the next placement fail as with a wrong or
	// unpermitted key; the returned func makes the fake accept it again.
	RefuseCredentials() (accept func())
}

// venueCase is one real venue under test: its fake, its HOOX_<ENV>_*
// variables, the exchange name a signal uses and a symbol and quantity its
// filters accept as they are (no rounding), so the order row can be
// compared with the signal.
type venueCase struct {
	name     string // exchange field
	env      string // HOOX_<env>_*
	symbol   string
	quantity string
	newFake  func(t *testing.T) fakeVenue
}

var venueCases = []venueCase{
	{name: "binance", env: "BINANCE", symbol: "BTCUSDT", quantity: "0.002",
		newFake: func(t *testing.T) fakeVenue {
			return &binanceFake{binancefake.New(t, binancefake.Options{}), binancefake.MarketSpot}
		}},
	{name: "binance-futures", env: "BINANCE_FUTURES", symbol: "ETHUSDT", quantity: "0.05",
		newFake: func(t *testing.T) fakeVenue {
			return &binanceFake{binancefake.New(t, binancefake.Options{}), binancefake.MarketFutures}
		}},
	{name: "bybit", env: "BYBIT", symbol: "BTCUSDT", quantity: "0.003",
		newFake: func(t *testing.T) fakeVenue {
			return &bybitFake{bybitfake.New(t, bybitfake.Options{}), bybitfake.CategoryLinear}
		}},
	{name: "bybit-spot", env: "BYBIT_SPOT", symbol: "ETHUSDT", quantity: "0.0123",
		newFake: func(t *testing.T) fakeVenue {
			return &bybitFake{bybitfake.New(t, bybitfake.Options{}), bybitfake.CategorySpot}
		}},
}

// eachVenue runs fn as a parallel subtest per venue, each with its own fake.
func eachVenue(t *testing.T, fn func(t *testing.T, vc venueCase, fake fakeVenue)) {
	t.Helper()
	for _, vc := range venueCases {
		t.Run(vc.name, func(t *testing.T) {
			t.Parallel()
			fn(t, vc, vc.newFake(t))
		})
	}
}

// env configures vc's venue at fake for a `hoox serve`.
func (vc venueCase) envFor(fake fakeVenue) []string {
	p := "HOOX_" + vc.env
	return []string{p + "_API_KEY=" + fake.Key(), p + "_API_SECRET=" + fake.Secret(), p + "_BASE_URL=" + fake.URL()}
}

// signal is a body for vc's venue; extra is raw JSON members appended.
func (vc venueCase) signal(extra string) string {
	body := fmt.Sprintf(`{"secret":%q,"exchange":%q,"symbol":%q,"action":"buy","quantity":%q`, testSecret, vc.name, vc.symbol, vc.quantity)
	if extra != "" {
		body += "," + extra
	}
	return body + "}"
}

type binanceFake struct {
	*binancefake.Server
	market string
}

func (f *binanceFake) URL() string    { return f.Server.URL }
func (f *binanceFake) Key() string    { return f.APIKey() }
func (f *binanceFake) Secret() string { return f.APISecret() }
func (f *binanceFake) Orders() []fakeOrder {
	var out []fakeOrder
	for _, o := range f.Server.Orders() {
		if o.Market == f.market {
			out = append(out, fakeOrder{o.ClientOrderID, strconv.FormatInt(o.OrderID, 10), o.Symbol})
		}
	}
	return out
}
func (f *binanceFake) ServerErrorAfterAccept() {
	f.Inject(binancefake.Fault{Kind: binancefake.FaultServerErrorAfterAccept})
}
func (f *binanceFake) HangAfterAccept() {
	f.Inject(binancefake.Fault{Kind: binancefake.FaultHangAfterAccept})
}

// LagNextLookup sets the fake's lag for every order placed from now on:
// binancefake has no per-order lag, and the tests using it place one order.
func (f *binanceFake) LagNextLookup(d time.Duration) { f.SetLookupLag(d) }
func (f *binanceFake) RefuseCredentials() func() {
	// binancefake cannot change the key it accepts; a -2015 fault on the
	// next placement is the same answer Binance gives a key without trade
	// permission or from an IP off its whitelist.
	f.Inject(binancefake.Fault{Kind: binancefake.FaultCredentials})
	return func() {}
}

type bybitFake struct {
	*bybitfake.Server
	category string
}

func (f *bybitFake) URL() string    { return f.Server.URL }
func (f *bybitFake) Key() string    { return bybitfake.DefaultAPIKey }
func (f *bybitFake) Secret() string { return bybitfake.DefaultAPISecret }
func (f *bybitFake) Orders() []fakeOrder {
	var out []fakeOrder
	for _, o := range f.Server.Orders() {
		if o.Category == f.category {
			out = append(out, fakeOrder{o.OrderLinkID, o.OrderID, o.Symbol})
		}
	}
	return out
}
func (f *bybitFake) ServerErrorAfterAccept() {
	f.InjectPlacements(1, bybitfake.ServerErrorAfterAccept())
}
func (f *bybitFake) HangAfterAccept()              { f.InjectPlacements(1, bybitfake.HangAfterAccept()) }
func (f *bybitFake) LagNextLookup(d time.Duration) { f.LagLookups(1, d) }
func (f *bybitFake) RefuseCredentials() func() {
	// The fake stops accepting hoox's key (10003 "API key is invalid"),
	// as after the key was deleted or rotated at Bybit.
	f.SetCredentials("rotated-key", "rotated-secret")
	return func() { f.SetCredentials(bybitfake.DefaultAPIKey, bybitfake.DefaultAPISecret) }
}

// perClientID groups the fake's orders by client order ID.
func perClientID(orders []fakeOrder) map[string]int {
	out := map[string]int{}
	for _, o := range orders {
		out[o.ClientOrderID]++
	}
	return out
}

// logLines collects a child process's JSON log lines.
type logLines struct{ buf syncBuffer }

// has reports whether a line at level carries msg (as a substring) and every
// attribute in attrs (key, value pairs compared as strings).
func (l *logLines) has(level, msg string, attrs ...string) bool {
	for line := range strings.Lines(l.buf.String()) {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		if m["level"] != level || !strings.Contains(fmt.Sprint(m["msg"]), msg) {
			continue
		}
		ok := true
		for i := 0; i+1 < len(attrs); i += 2 {
			if fmt.Sprint(m[attrs[i]]) != attrs[i+1] {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func (l *logLines) String() string { return l.buf.String() }

// startVenueServe is startServe that keeps the child's log for the test.
func startVenueServe(t *testing.T, dbURL string, env ...string) (*serveProcess, *logLines) {
	t.Helper()
	cmd := exec.Command(binary(t), "serve", "--addr", "127.0.0.1:0", "--no-migrate")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "DATABASE_URL=" + dbURL,
		"HOOX_WEBHOOK_SECRET=" + testSecret, "HOOX_LOG_LEVEL=debug"}, env...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &serveProcess{cmd: cmd, exited: make(chan error, 1)}
	logs := &logLines{}
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			_, _ = logs.buf.Write(append(sc.Bytes(), '\n'))
			var line struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "hoox listening" {
				listening <- line.Addr
			}
		}
		p.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-waitOr(p.exited)
	})
	select {
	case addr := <-listening:
		p.url = "http://" + addr
	case err := <-p.exited:
		t.Fatalf("hoox serve exited: %v\n%s", err, logs)
	case <-time.After(60 * time.Second):
		t.Fatalf("hoox serve did not start\n%s", logs)
	}
	return p, logs
}

// awaitAll polls every named condition until all hold, failing with the
// names of those that did not within timeout. The slow venue tests use it
// to wait out the venues' accept windows together: parallel subtests run
// only GOMAXPROCS at a time, and each would wait the window alone.
func awaitAll(t *testing.T, timeout time.Duration, what string, conds map[string]func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	pending := maps.Clone(conds)
	for {
		for name, cond := range pending {
			if cond() {
				delete(pending, name)
			}
		}
		if len(pending) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s for %v", what, timeout, slices.Sorted(maps.Keys(pending)))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
