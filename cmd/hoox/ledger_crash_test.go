package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// A spot buy whose `hoox serve` was SIGKILLed between the venue's answer
// and the commit counts once in its strategy's ledger when the resend
// adopts it (and not again on a further resend), and the strategy's close
// then sells exactly that — on every spot venue, through real processes.
func TestSpotBuyCrashedThenAdoptedCountsOnceAndTheCloseSellsIt(t *testing.T) {
	t.Parallel()
	for _, vc := range venueCases {
		if vc.kind.Positions {
			continue // derivatives: a close closes the venue's position
		}
		t.Run(vc.name, func(t *testing.T) {
			t.Parallel()
			fake := vc.newFake(t)
			fake.SetSpotFeeRate(decimal.Zero) // no fee: what counts once is under test
			dbURL := pgtest.NewDatabase(t)
			pool := pgtest.OpenPool(t, dbURL)
			env := vc.envFor(fake)
			buy := vc.signal(`"trace_id":"ledger-buy","strategy":"drill"`)
			held := crashAfterVenue(t, dbURL, env, buy, fake)

			survivor, _ := startVenueServe(t, dbURL, env...)
			r := apptest.Post(t, survivor.url, buy)
			require.Equal(t, http.StatusOK, r.Status, r.Raw)
			require.Equal(t, held.ClientOrderID, r.Str("order", "client_order_id"), "adopted")
			ledger := func() decimal.Decimal {
				t.Helper()
				return decimal.RequireFromString(apptest.Text(t, pool,
					`SELECT coalesce((SELECT quantity FROM spot_ledger WHERE strategy = 'drill'), 0)::text`))
			}
			bought := decimal.RequireFromString(vc.quantity)
			require.True(t, bought.Equal(ledger()), "the ledger holds %s, not the %s bought", ledger(), bought)
			again := apptest.Post(t, survivor.url, buy)
			require.Equal(t, http.StatusConflict, again.Status, again.Raw)
			require.True(t, bought.Equal(ledger()), "counted once")

			exit := strings.Replace(vc.signal(`"trace_id":"ledger-exit","strategy":"drill"`), `"action":"buy"`, `"action":"close"`, 1)
			c := apptest.Post(t, survivor.url, exit)
			require.Equal(t, http.StatusOK, c.Status, c.Raw)
			require.Equal(t, "sell", c.Str("order", "side"))
			require.True(t, bought.Equal(decimal.RequireFromString(c.Str("order", "quantity"))), "sold %s", c.Str("order", "quantity"))
			require.True(t, ledger().IsZero())
			require.Len(t, fake.Orders(), 2, "one buy, one sell")
		})
	}
}
