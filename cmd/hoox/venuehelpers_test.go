package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/venuefake"
	"github.com/hoox/hoox/exchange/venues"
)

// fakeOrder is one order a fake venue accepted.
type fakeOrder = venuefake.Order

// fakeVenue is what the whole-gateway tests need from a venue's fake: the
// interface every fake implements (venuefake.Fake), so that each test runs
// on every venue in the registry.
type fakeVenue = venuefake.Fake

// venueCase is one real venue under test: its registry entry, the exchange
// name a signal uses, its HOOX_<ENV>_* infix and a symbol and quantity its
// fake's filters accept as they are (no rounding), so the order row can be
// compared with the signal.
type venueCase struct {
	kind     venues.Kind
	name     string // exchange field
	env      string // HOOX_<env>_*
	symbol   string
	quantity string
}

// newFake starts the venue's fake for one test.
func (vc venueCase) newFake(t *testing.T) fakeVenue { return vc.kind.StartFake(t) }

// venueCases is every venue in the registry.
var venueCases = func() []venueCase {
	var out []venueCase
	for _, k := range venues.All() {
		out = append(out, venueCase{kind: k, name: k.Name, env: k.Env, symbol: k.Fake.Symbol, quantity: k.Fake.Quantity})
	}
	return out
}()

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
	env := []string{p + "_API_KEY=" + fake.APIKey(), p + "_API_SECRET=" + fake.APISecret(), p + "_BASE_URL=" + fake.URL()}
	if vc.kind.Passphrase {
		env = append(env, p+"_API_PASSPHRASE="+fake.Passphrase())
	}
	return env
}

// signal is a body for vc's venue; extra is raw JSON members appended.
func (vc venueCase) signal(extra string) string {
	body := fmt.Sprintf(`{"secret":%q,"exchange":%q,"symbol":%q,"action":"buy","quantity":%q`, testSecret, vc.name, vc.symbol, vc.quantity)
	if extra != "" {
		body += "," + extra
	}
	return body + "}"
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
		"HOOX_WEBHOOK_SECRET=" + testSecret, "HOOX_LOG_LEVEL=debug",
		// Every venue in the registry runs a server at once in some tests
		// (six today); smaller pools keep them inside the test cluster's
		// connection limit.
		"HOOX_DB_MAX_CONNS=8", "HOOX_DB_MIN_CONNS=1"}, env...)
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
