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
