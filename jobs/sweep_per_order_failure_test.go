package jobs_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/internal/testfactory"
	"github.com/hoox/hoox/jobs"
)

// refusesOneLookup is Bybit refusing the lookup of one order (id) with a
// parameter error, as it answers a request whose parameters it does not
// take; every other request goes to Bybit.
type refusesOneLookup struct {
	*bybit.Venue
	id string
}

func (v refusesOneLookup) Lookup(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	if o.ClientOrderID == v.id {
		return exchange.Report{}, fmt.Errorf("bybit lookup %s: %w", o.ClientOrderID, &bybit.APIError{Venue: "bybit",
			Path: "/v5/order/realtime", HTTPStatus: http.StatusOK, Code: 10001, Msg: "params error", Class: bybit.ClassFilter})
	}
	return v.Venue.Lookup(ctx, o)
}

// One intent left open at Bybit whose lookup Bybit refuses for a reason of
// its own (its parameters) is asked at every sweep, its asked_at never
// moved. Its failure was taken for Bybit being down: every sweep then left
// all of Bybit's other unknown orders for the next one, and a missed trade
// Bybit booked late was never recorded. A refusal of one request is Bybit's
// answer: Bybit is up, and its other unknown orders are asked.
func TestALookupBybitRefusesForOneOrderDoesNotStopTheSweepAskingAboutBybitsOthers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	_, v, missed := bybitUnknowns(t, b, 1, 2*time.Hour)
	refused := exchange.Order{ClientOrderID: "hxbybitrefusedlookup000000000001", Symbol: "BTCUSDT", Action: "buy", Side: "buy",
		OrderType: "market", Quantity: decimal.RequireFromString("0.01")}
	testfactory.Intent(t, b.pool, testfactory.IntentOpts{TraceID: "k:refused", Exchange: "bybit", Order: refused,
		SentAt: time.Now().Add(-3 * time.Hour)})
	_, err := b.pool.Exec(ctx, `UPDATE dispatch_intents SET asked_at = now() - interval '2 hours' WHERE client_order_id = $1`, refused.ClientOrderID)
	require.NoError(t, err)
	b.venues = exchange.NewRegistry(map[string]exchange.Venue{"bybit": refusesOneLookup{Venue: v.(*bybit.Venue), id: refused.ClientOrderID}})

	// The missed trade's order was booked late.
	_, err = v.Place(ctx, missed[0])
	require.NoError(t, err)

	sw := jobs.NewSweepWorker(b.pool, jobs.Config{}, b.venues, nil, jobs.NewMetrics(nil))
	_, err = sw.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, traceStatus(t, b.pool, "k:bybit-unknown-0"), "the order Bybit booked late is recorded")
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM trace_ids WHERE trace_id = 'k:refused'`), "the refused one stays left open")
}
