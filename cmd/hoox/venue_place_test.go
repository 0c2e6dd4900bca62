package main

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// A signal for a real venue goes through `hoox serve` to the venue's fake
// and comes back recorded: the order row carries the venue's own order ID
// and the quantity as sent, and a repeat is a 409 that places nothing.
func TestVenueSignalIsPlacedAndRecorded(t *testing.T) {
	t.Parallel()
	eachVenue(t, func(t *testing.T, vc venueCase, fake fakeVenue) {
		dbURL := pgtest.NewDatabase(t)
		pool := pgtest.OpenPool(t, dbURL)
		srv, _ := startVenueServe(t, dbURL, vc.envFor(fake)...)

		body := vc.signal(`"trace_id":"place-1"`)
		r := apptest.Post(t, srv.url, body)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		require.Equal(t, vc.name, r.Str("order", "exchange"))
		held := fake.Orders()
		require.Len(t, held, 1, "the venue holds one order")
		require.Equal(t, held[0].ClientOrderID, r.Str("order", "client_order_id"))
		require.Equal(t, held[0].ExchangeOrderID, r.Str("order", "exchange_order_id"))
		require.Equal(t, vc.quantity, r.Str("order", "quantity"))

		var exchangeOrderID, quantity, exchange, status string
		require.NoError(t, pool.QueryRow(t.Context(), `SELECT exchange_order_id, trim_scale(quantity)::text, exchange, status
			FROM orders WHERE trace_id = 'k:place-1'`).Scan(&exchangeOrderID, &quantity, &exchange, &status))
		require.Equal(t, held[0].ExchangeOrderID, exchangeOrderID)
		require.Equal(t, vc.quantity, quantity)
		require.Equal(t, vc.name, exchange)
		require.Equal(t, "filled", status)

		again := apptest.Post(t, srv.url, body)
		require.Equal(t, http.StatusConflict, again.Status, again.Raw)
		require.Equal(t, "duplicate", again.Str("code"))
		require.Len(t, fake.Orders(), 1, "a repeat places nothing")
	})
}

// Two `hoox serve` processes on one database, many concurrent senders of
// the same signals: each signal is exactly one order at the venue and one
// order row, and every sender hears 200 or 409.
func TestVenueTwoReplicaStormPlacesOneOrderPerSignal(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("two hoox processes per venue under a storm")
	}
	const keys, senders = 20, 20
	eachVenue(t, func(t *testing.T, vc venueCase, fake fakeVenue) {
		dbURL := pgtest.NewDatabase(t)
		pool := pgtest.OpenPool(t, dbURL)
		a, _ := startVenueServe(t, dbURL, vc.envFor(fake)...)
		b, _ := startVenueServe(t, dbURL, vc.envFor(fake)...)
		urls := []string{a.url, b.url}

		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			statuses = map[int]int{}
			start    = make(chan struct{})
		)
		for k := range keys {
			body := vc.signal(fmt.Sprintf(`"trace_id":"storm-%d"`, k))
			for s := range senders {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					st := apptest.SendOnce(urls[(k+s)%2] + "|" + body)
					mu.Lock()
					statuses[st]++
					mu.Unlock()
				}()
			}
		}
		close(start)
		wg.Wait()

		require.Equal(t, keys*senders, statuses[http.StatusOK]+statuses[http.StatusConflict], "only 200 and 409: %v", statuses)
		require.Equal(t, keys, statuses[http.StatusOK], "one 200 per signal, from the attempt that placed it: %v", statuses)
		held := fake.Orders()
		require.Len(t, held, keys, "one order per signal at the venue")
		for id, n := range perClientID(held) {
			require.Equal(t, 1, n, "client order id %s placed %d times", id, n)
		}
		require.Equal(t, keys, apptest.Count(t, pool, "SELECT count(*) FROM orders"))
		require.Equal(t, keys, apptest.Count(t, pool, "SELECT count(DISTINCT trace_id) FROM orders"))
		require.Equal(t, keys, apptest.Count(t, pool, "SELECT count(*) FROM orders WHERE exchange_order_id IS NOT NULL AND status = 'filled'"))
	})
}
