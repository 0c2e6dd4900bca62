package venuekit

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
)

// What an answer means for the gateway, class by class: the rules every
// adapter shares.
func TestAPIErrorUnwrapsToWhatTheGatewayBranchesOn(t *testing.T) {
	t.Parallel()
	is := func(e *APIError, target error) bool { return errors.Is(e, target) }
	placement := Lost("v", "/order", true, true, "reset")
	require.True(t, is(placement, exchange.ErrUnknownOutcome), "a written placement whose answer was lost may have placed")
	require.False(t, is(placement, exchange.ErrUnreachable))
	read := Lost("v", "/time", false, true, "reset")
	require.True(t, is(read, exchange.ErrUnreachable), "a read whose answer was lost placed nothing")
	unsent := Lost("v", "/order", true, false, "refused")
	require.True(t, is(unsent, exchange.ErrUnreachable), "a request never written placed nothing")

	require.Equal(t, ClassUnknown, Bare(http.StatusBadGateway), "a proxy's status after writing is unknown")
	require.Equal(t, ClassUnknown, Bare(http.StatusBadRequest))
	require.Equal(t, ClassUnreachable, Bare(http.StatusForbidden, http.StatusForbidden), "unless the venue documents it as its door")

	creds := &APIError{Class: ClassCredentials}
	require.True(t, is(creds, exchange.ErrCredentials) && is(creds, exchange.ErrUnreachable))
	require.True(t, is(&APIError{Class: ClassDuplicate}, exchange.ErrDuplicateClientOrderID))
	require.True(t, is(&APIError{Class: ClassNotFound}, exchange.ErrNotFound))
	for _, c := range []Class{ClassRejected, ClassFilter} {
		e := &APIError{Class: c}
		require.True(t, e.Refused())
		require.Empty(t, e.Unwrap(), "a refusal is a rejected report, not an error the gateway branches on")
	}
}

// A request cut off after its headers counts as written.
func TestTraceWritesSeesAWrittenRequest(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hj, _ := w.(http.Hijacker)
		conn, _, _ := hj.Hijack()
		_ = conn.Close()
	}))
	defer srv.Close()
	ctx, wrote := TraceWrites(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, nil)
	_, err := http.DefaultClient.Do(req)
	require.Error(t, err)
	require.True(t, wrote())

	ctx, wrote = TraceWrites(t.Context())
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:1", nil)
	_, err = http.DefaultClient.Do(req)
	require.Error(t, err)
	require.False(t, wrote(), "a refused connection wrote nothing")
}

func TestClockPausesAndFilterCache(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	c := &Clock{Now: func() time.Time { return now }, Interval: time.Minute}
	reads := 0
	read := func(context.Context) (time.Time, error) { reads++; return now.Add(3 * time.Second), nil }
	_, err := c.Ensure(t.Context(), read)
	require.NoError(t, err)
	require.Equal(t, 3*time.Second, c.Offset())
	_, _ = c.Ensure(t.Context(), read)
	require.Equal(t, 1, reads, "a fresh offset is not measured again")
	c.Forget()
	_, _ = c.Ensure(t.Context(), read)
	require.Equal(t, 2, reads, "a forgotten one is")

	var p Pauses
	p.Pause("/order", now.Add(time.Second))
	p.Pause("/order", now.Add(time.Millisecond))
	until, paused := p.Until(now, "", "/order")
	require.True(t, paused)
	require.Equal(t, now.Add(time.Second), until, "a shorter pause does not cut a longer one")
	_, paused = p.Until(now.Add(time.Second), "/order")
	require.False(t, paused)

	var fc FilterCache[int]
	fc.Put("BTCUSDT", 7, true, now)
	f, found, ok := fc.Get("BTCUSDT", now.Add(time.Minute), time.Hour)
	require.True(t, ok && found)
	require.Equal(t, 7, f)
	_, _, ok = fc.Get("BTCUSDT", now.Add(time.Hour), time.Hour)
	require.False(t, ok, "expired")
	fc.Drop("BTCUSDT")
	_, _, ok = fc.Get("BTCUSDT", now, time.Hour)
	require.False(t, ok, "dropped")
}
