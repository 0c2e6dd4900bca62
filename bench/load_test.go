package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// countingServer answers /healthz with 200 and counts requests and the
// connections they came on.
func countingServer(t *testing.T, handler http.HandlerFunc) (srv *httptest.Server, requests, conns *atomic.Int64) {
	requests, conns = new(atomic.Int64), new(atomic.Int64)
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		handler(w, r)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, requests, conns
}

// The sender reads answers with a length, chunked answers and answers that
// close the connection, keeps the start of each body (a problem's code is
// what labels it), and dials again after a close.
func TestSenderReadsEveryAnswerShape(t *testing.T) {
	srv, requests, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/length":
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"status":409,"code":"duplicate","detail":"seen"}`)
		case "/chunked":
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"code":"unavailable",`)
			w.(http.Flusher).Flush()
			fmt.Fprint(w, strings.Repeat(" ", 3000)+`}`)
		case "/close":
			w.Header().Set("Connection", "close")
			fmt.Fprint(w, "bye")
		}
	})
	host, err := hostPort(srv.URL)
	require.NoError(t, err)
	s := newSender(host, 5*time.Second)
	defer s.close()
	get := func(path string) string {
		code, err := s.do(request(nil, http.MethodGet, host, path, "", nil))
		return outcome(code, err, s.body)
	}
	for range 3 {
		require.Equal(t, "409 duplicate", get("/length"))
		require.Equal(t, "503 unavailable", get("/chunked"))
		require.LessOrEqual(t, len(s.body), maxKeptBody)
	}
	require.Equal(t, int64(1), conns.Load(), "answers with a length or chunks keep the connection")
	require.Equal(t, "200", get("/close"))
	require.Equal(t, "409 duplicate", get("/length"))
	require.Equal(t, int64(2), conns.Load(), "a closed connection is dialled again")
	require.Equal(t, int64(8), requests.Load())
}

// A closed loop records exactly the answers the server gave, on one
// connection per sender.
func TestClosedLoopRecordsEveryAnswer(t *testing.T) {
	srv, requests, conns := countingServer(t, func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") })
	rep, err := Run(context.Background(), LoadConfig{URL: srv.URL, Target: TargetHealthz, Rate: 0, Workers: 3,
		Duration: 200 * time.Millisecond})
	require.NoError(t, err)
	require.Positive(t, rep.Requests)
	require.Equal(t, requests.Load(), int64(rep.Requests))
	require.Equal(t, rep.Requests, rep.Count("200"))
	require.Equal(t, int64(3), conns.Load())
}

// An open loop sends request n at (n+1)·interval and stops at the end of
// the run: 200/s for 250 ms is requests 0–48, whether or not the server
// keeps up; the latency of each counts from its scheduled time.
func TestOpenLoopSendsOnSchedule(t *testing.T) {
	release := make(chan struct{})
	var held atomic.Int64
	var firstArrived, lastArrived time.Time // written before release is closed, read after Run
	srv, requests, _ := countingServer(t, func(w http.ResponseWriter, _ *http.Request) {
		// The first answer waits until the last request has arrived: the
		// loop must not wait for it.
		switch held.Add(1) {
		case 1:
			firstArrived = time.Now()
			<-release
		case 49:
			lastArrived = time.Now()
			close(release)
		}
		fmt.Fprint(w, "ok")
	})
	rep, err := Run(context.Background(), LoadConfig{URL: srv.URL, Target: TargetHealthz, Rate: 200, Workers: 1,
		Duration: 250 * time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, 49, rep.Requests)
	require.Equal(t, int64(49), requests.Load())
	require.Equal(t, 49, rep.Count("200"))
	// The held request was answered only after the last one arrived, and
	// its latency counts from its schedule, so it spans the hold. (Which
	// request arrives first is the machine's choice: on a busy one it need
	// not be the one scheduled at 5 ms.)
	require.GreaterOrEqual(t, rep.All.Max, lastArrived.Sub(firstArrived))
	require.Greater(t, lastArrived.Sub(firstArrived), 100*time.Millisecond, "the requests went out on their schedule, not at once")
}

func TestScheduledIsOneIntervalPerRequest(t *testing.T) {
	began := time.Unix(1_700_000_000, 0)
	require.Equal(t, began.Add(time.Millisecond), scheduled(began, 0, time.Millisecond))
	require.Equal(t, began.Add(50*time.Millisecond), scheduled(began, 0, 50*time.Millisecond))
	require.Equal(t, began.Add(8*time.Millisecond), scheduled(began, 7, time.Millisecond))
}

// The slowest second is the one whose requests hold most of the answers
// slower than the run's p99, found from their send times: a run whose
// stall began 3 s in reports the stretch from 3 s.
func TestSlowestFindsTheStall(t *testing.T) {
	began := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	rep := &Report{byOutcome: map[string][]time.Duration{}}
	// 1,000 requests, one every 10 ms, answered in 2 ms, but those sent
	// from 3.0 s to 3.2 s wait for a stall that ends at 3.2 s.
	stallEnd := began.Add(3200 * time.Millisecond)
	for i := range 1000 {
		at := began.Add(time.Duration(i) * 10 * time.Millisecond)
		lat := 2 * time.Millisecond
		if !at.Before(began.Add(3*time.Second)) && at.Before(stallEnd) {
			lat = stallEnd.Sub(at)
		}
		rep.add("200", lat, at.Add(lat))
	}
	rep.finish(began)
	require.Equal(t, 100*time.Millisecond, rep.All.P99, "the p99 is the tenth-slowest answer")

	s, ok := rep.Slowest(time.Second)
	require.True(t, ok)
	require.Equal(t, began.Add(3*time.Second), s.From)
	require.Equal(t, began.Add(4*time.Second), s.To)
	require.Equal(t, 100, s.Requests)
	require.Equal(t, 10, s.OverAll, "ten answers are slower than the p99")
	require.Equal(t, 10, s.Over, "all of them were sent in the stall")
	require.Equal(t, 200*time.Millisecond, s.Max)
	secs := rep.SecondsP99()
	require.Len(t, secs, 10)
	require.Equal(t, 2*time.Millisecond, secs[0])
	require.Equal(t, 190*time.Millisecond, secs[3], "the stall's second: its second-slowest of 100")
	require.Equal(t, 2*time.Millisecond, secs[4])

	// A run without a tail has nothing to show.
	flat := &Report{byOutcome: map[string][]time.Duration{}}
	for i := range 100 {
		at := began.Add(time.Duration(i) * 10 * time.Millisecond)
		flat.add("200", time.Millisecond, at.Add(time.Millisecond))
	}
	flat.finish(began)
	_, ok = flat.Slowest(time.Second)
	require.False(t, ok)
}

// The machine's CPU shares come from /proc/stat's counters between two
// reads: busy is neither idle nor waiting on I/O.
func TestCPUStatSince(t *testing.T) {
	before := cpuStat{total: 1000, idle: 400, iowait: 100, steal: 10}
	after := cpuStat{total: 1200, idle: 450, iowait: 110, steal: 30}
	busy, io, steal := after.since(before)
	require.InDelta(t, 0.70, busy, 1e-9)
	require.InDelta(t, 0.05, io, 1e-9)
	require.InDelta(t, 0.10, steal, 1e-9)
	busy, _, _ = after.since(cpuStat{})
	require.Zero(t, busy, "no earlier read, no share")
	st, err := readCPUStat()
	require.NoError(t, err)
	require.Positive(t, st.total)
}

// Every run says how much of the machine it had: the hypervisor's steal
// makes two rounds of the same code incomparable.
func TestObservationPrintsTheMachinesShare(t *testing.T) {
	var b strings.Builder
	Observation{Elapsed: time.Second, MachineBusy: 0.9, MachineIOWait: 0.02, MachineSteal: 0.15}.Print(&b, 100, "signal")
	require.Contains(t, b.String(), "machine during the run: CPU busy 90% (steal 15% of the machine's time), iowait 2%\n")
	b.Reset()
	Observation{Elapsed: time.Second}.Print(&b, 100, "signal")
	require.NotContains(t, b.String(), "machine during the run", "no /proc/stat, no line")
}
