package api_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/api"
)

// River's UI opens on the web page's session and changes state (retry,
// cancel, delete jobs, pause queues) on it with no CSRF token: only the
// Origin check and SameSite=Strict stand in the way, and a page that
// framed River's UI would defeat both (the clicks are River's own
// script's, from this origin). So River's UI refuses to be framed, as
// every /ui/ page does.
func TestRiverUIOnTheSessionCannotBeFramed(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	br := newBrowser(t, b.handler)
	br.login(adminToken)

	page := br.get("/ui/")
	require.Equal(t, http.StatusOK, page.Status)
	require.Equal(t, "DENY", page.Header.Get("X-Frame-Options"), "the /ui/ pages refuse framing")

	res := br.get("/admin/river/")
	require.Equal(t, http.StatusOK, res.Status, "River's UI opens on the session")
	framing := res.Header.Get("X-Frame-Options") != "" ||
		strings.Contains(res.Header.Get("Content-Security-Policy"), "frame-ancestors")
	require.True(t, framing, "River's UI on the session may be framed by another page: X-Frame-Options %q, Content-Security-Policy %q",
		res.Header.Get("X-Frame-Options"), res.Header.Get("Content-Security-Policy"))
}

// A signed X-Hoox-Timestamp more than MaxSignalAge away from the server's
// clock is refused as a possible replay, in the past or in the future
// (authenticate), however far: a stamp some centuries ahead (the 11
// digits parseUnixSeconds accepts) saturated now.Sub and passed both
// bounds, so the signature never expired — and a window signal, which a
// stamped signature may carry only because the stamp bounds its replays,
// became a new order at every resend after HOOX_DEDUP_WINDOW.
func TestSignedTimestampFarInTheFutureIsRefused(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	window := `{"exchange":"paper","symbol":"ETHUSDT","action":"buy","quantity":"1"}`
	hourAhead := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	r := postSigned(t, b.handler, window, map[string]string{api.HeaderTimestamp: hourAhead, api.HeaderSignature: sign(hourAhead + "." + window)})
	require.Equal(t, http.StatusUnauthorized, r.Status, "an hour ahead is refused: %s", r.Body)

	for _, ts := range []string{"20000000000", "99999999999"} { // years 2603 and 5138
		r := postSigned(t, b.handler, window, map[string]string{api.HeaderTimestamp: ts, api.HeaderSignature: sign(ts + "." + window)})
		require.Equal(t, http.StatusUnauthorized, r.Status, "X-Hoox-Timestamp %s (centuries ahead) was accepted: %s", ts, r.Body)
	}
}

// A signed X-Hoox-Timestamp more than MaxSignalAge away from the
// server's clock is refused to the sub-second, and app.Config keeps
// MaxSignalAge at most half of HOOX_DEDUP_WINDOW so that a stamped window
// signal and any replay of it arrive at most the window apart: a stamp
// 30.9 s old under a 30 s bound (the age floored to whole seconds) let a
// replay in 60.9 s after the first arrival, past the default window — a
// new window trace, a second order.
func TestSignedTimestampJustPastTheAgeIsRefused(t *testing.T) {
	t.Parallel()
	const stamp = 1_800_000_000
	now := time.Unix(stamp, 0)
	b := setupWebhook(t, func(c *api.Config) {
		c.Timing.MaxSignalAge = 30 * time.Second
		c.Timing.Now = func() time.Time { return now }
	})
	window := `{"exchange":"paper","symbol":"ETHUSDT","action":"buy","quantity":"1"}`
	ts := strconv.FormatInt(stamp, 10)
	post := func(at time.Time) response {
		now = at
		return postSigned(t, b.handler, window, map[string]string{api.HeaderTimestamp: ts, api.HeaderSignature: sign(ts + "." + window)})
	}

	first := post(time.Unix(stamp-30, 0)) // the sender's clock 30 s ahead: accepted, as before
	require.NotEqual(t, http.StatusUnauthorized, first.Status, "%s", first.Body)

	replay := post(time.Unix(stamp+30, int64(900*time.Millisecond))) // 60.9 s after the first arrival
	require.Equal(t, http.StatusUnauthorized, replay.Status,
		"a stamp 30.9 s old was accepted under a 30 s MaxSignalAge (60.9 s after the same request was first accepted, past a 60 s window): %s", replay.Body)
}
