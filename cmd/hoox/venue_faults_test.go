package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/venuefake"
	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// A venue that answers 5xx after it accepted the order: the outcome is
// unknown, so hoox answers 202 reconciling (never 503, which would invite a
// retry into a second order), and the reconcile job finds the order by its
// client order ID and adopts it.
func TestVenueServerErrorAfterAcceptIsReconciledToOneOrder(t *testing.T) {
	t.Parallel()
	eachVenue(t, func(t *testing.T, vc venueCase, fake fakeVenue) {
		dbURL := pgtest.NewDatabase(t)
		pool := pgtest.OpenPool(t, dbURL)
		srv, _ := startVenueServe(t, dbURL, vc.envFor(fake)...)
		body := vc.signal(`"trace_id":"5xx-1"`)

		fake.Inject(venuefake.ServerErrorAfterAccept)
		r := apptest.Post(t, srv.url, body)
		require.Equal(t, http.StatusAccepted, r.Status, "a 5xx after acceptance is unknown, not unreachable: %s", r.Raw)
		require.Equal(t, "reconciling", r.Str("status"))
		held := fake.Orders()
		require.Len(t, held, 1, "the venue took the order despite its 5xx")

		require.Eventually(t, func() bool {
			return apptest.Count(t, pool, "SELECT count(*) FROM trace_ids WHERE trace_id = 'k:5xx-1' AND status = 'dispatched'") == 1
		}, 30*time.Second, 50*time.Millisecond, "the reconcile job adopts the order")
		require.Equal(t, held[0].ExchangeOrderID, apptest.Text(t, pool, "SELECT exchange_order_id FROM orders WHERE trace_id = 'k:5xx-1'"))
		require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:5xx-1' AND event = 'reconciled' AND detail->>'adopted' = 'true'"))
		require.Len(t, fake.Orders(), 1, "one order at the venue")

		again := apptest.Post(t, srv.url, body)
		require.Equal(t, http.StatusConflict, again.Status, again.Raw)
		require.Equal(t, "dispatched", again.Str("original", "status"))
		require.Len(t, fake.Orders(), 1)
	})
}

// A lost answer (5xx after acceptance) on a venue whose order query lags the
// placement: the reconcile's first lookup says "not found", which proves
// nothing while the request's accept window is open. The job waits the
// window out instead of placing again (on Binance a filled order's client
// ID is free, so a re-place would be a second order), then finds and adopts
// the order.
func TestVenueLaggingLookupAfterALostAnswerPlacesNothingTwice(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits out the venue's accept window (~17 s)")
	}
	type rig struct {
		vc   venueCase
		fake fakeVenue
		pool *pgxpool.Pool
		url  string
	}
	var rigs []rig
	body := func(vc venueCase) string { return vc.signal(`"trace_id":"lag-1"`) }
	for _, vc := range venueCases {
		fake := vc.newFake(t)
		dbURL := pgtest.NewDatabase(t)
		srv, _ := startVenueServe(t, dbURL, vc.envFor(fake)...)
		fake.LagNextLookup(5 * time.Second)
		fake.Inject(venuefake.ServerErrorAfterAccept)
		r := apptest.Post(t, srv.url, body(vc))
		require.Equal(t, http.StatusAccepted, r.Status, "%s: %s", vc.name, r.Raw)
		rigs = append(rigs, rig{vc, fake, pgtest.OpenPool(t, dbURL), srv.url})
	}

	// Wait until the reconcile has acted on its first lookup: snoozed until
	// the window closes (River holds the job as scheduled), or — wrongly —
	// settled the trace or placed again.
	acted := map[string]func() bool{}
	for _, r := range rigs {
		acted[r.vc.name] = func() bool {
			return apptest.Count(t, r.pool, "SELECT count(*) FROM river_job WHERE kind = 'reconcile' AND state = 'scheduled' AND scheduled_at > now()") == 1 ||
				apptest.Count(t, r.pool, "SELECT count(*) FROM trace_ids WHERE trace_id = 'k:lag-1' AND status <> 'reconciling'") == 1 ||
				len(r.fake.Orders()) > 1
		}
	}
	awaitAll(t, 20*time.Second, "the reconcile looked the order up", acted)
	for _, r := range rigs {
		require.Equal(t, "reconciling", apptest.Text(t, r.pool, "SELECT status FROM trace_ids WHERE trace_id = 'k:lag-1'"), r.vc.name)
		require.Len(t, r.fake.Orders(), 1, "%s: nothing placed again while the lookup lags", r.vc.name)
	}

	settled := map[string]func() bool{}
	for _, r := range rigs {
		settled[r.vc.name] = func() bool {
			return apptest.Count(t, r.pool, "SELECT count(*) FROM trace_ids WHERE trace_id = 'k:lag-1' AND status <> 'reconciling'") == 1
		}
	}
	awaitAll(t, 60*time.Second, "the reconcile settles the trace after the window", settled)
	for _, r := range rigs {
		t.Run(r.vc.name, func(t *testing.T) {
			require.Equal(t, "dispatched", apptest.Text(t, r.pool, "SELECT status FROM trace_ids WHERE trace_id = 'k:lag-1'"))
			held := r.fake.Orders()
			require.Len(t, held, 1, "nothing placed twice")
			require.Equal(t, held[0].ExchangeOrderID, apptest.Text(t, r.pool, "SELECT exchange_order_id FROM orders WHERE trace_id = 'k:lag-1'"))
			require.Equal(t, 1, apptest.Count(t, r.pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:lag-1' AND event = 'reconciled' AND detail->>'adopted' = 'true'"))
		})
	}
}

// The venue refuses hoox's key (Binance -2015, Bybit 10003): nothing was
// placed, so the claim rolls back and the sender hears 503; the operator
// reads an error line saying what to fix (and never the secret); once the
// venue accepts the key again, the same signal executes.
func TestVenueCredentialsErrorIs503ThenTheSignalExecutesOnceFixed(t *testing.T) {
	t.Parallel()
	eachVenue(t, func(t *testing.T, vc venueCase, fake fakeVenue) {
		dbURL := pgtest.NewDatabase(t)
		pool := pgtest.OpenPool(t, dbURL)
		srv, logs := startVenueServe(t, dbURL, vc.envFor(fake)...)
		body := vc.signal(`"trace_id":"creds-1"`)

		accept := fake.RefuseCredentials()
		r := apptest.Post(t, srv.url, body)
		require.Equal(t, http.StatusServiceUnavailable, r.Status, r.Raw)
		require.Equal(t, "unavailable", r.Str("code"))
		require.NotEmpty(t, r.Header.Get("Retry-After"))
		require.Empty(t, fake.Orders(), "nothing placed")
		require.Zero(t, apptest.Count(t, pool, "SELECT count(*) FROM trace_ids"), "the claim rolled back")
		require.Eventually(t, func() bool {
			return logs.has("ERROR", "check the key and secret", "exchange", vc.name)
		}, 10*time.Second, 20*time.Millisecond, "an error line tells the operator to fix the key:\n%s", logs)
		require.NotContains(t, r.Raw, fake.APISecret())
		require.NotContains(t, logs.String(), fake.APISecret())

		accept()
		r = apptest.Post(t, srv.url, body)
		require.Equal(t, http.StatusOK, r.Status, "the same signal executes once the key is fixed: %s", r.Raw)
		require.Len(t, fake.Orders(), 1)
		require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM orders"))
	})
}
