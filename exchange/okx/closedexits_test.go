package okx_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
	"github.com/hoox/hoox/exchange/okx/okxfake"
)

const swapInst = "BTC-USDT-SWAP"

// algoStates are the fake's algo orders' states by algoClOrdId.
func algoStates(f *okxfake.Server) map[string]string {
	out := map[string]string{}
	for _, a := range f.AlgoOrders() {
		out[a.AlgoClOrdID] = a.State
	}
	return out
}

// A swap close cancels hoox's live trailing stops of the side it closed,
// and only once it flattened the position: a percent_of_position close of
// less leaves them (what is left of the long is still theirs to
// protect); a close of the whole long cancels its reduce-only sell stops
// with hoox's prefix, reports them as cancelled first, and leaves a stop
// the trader placed by hand and one on the other side alone.
func TestSwapWholeCloseCancelsHooxTrailingStopsOfItsSide(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSwap)
	fake.SetPosition(swapInst, d("-1"))
	buy := trailingExit("hxokxshortstop", "0.01", "1")
	buy.Side = "buy"
	r, err := v.Place(ctx(t), buy)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)
	fake.SetPosition(swapInst, d("5"))
	for _, id := range []string{"hxokxlongstop1", "manualstop1"} {
		r, err := v.Place(ctx(t), trailingExit(id, "0.02", "1.5"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)
	}

	part := exchange.Order{ClientOrderID: "hxokxpart1", Symbol: "BTCUSDT", Action: "close", OrderType: "market", Quantity: d("0.02"),
		Partial: true, Sizing: &exchange.Sizing{Type: exchange.QuantityPercentOfPosition, Asked: "40%"}}
	r, err = v.Place(ctx(t), part)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.Empty(t, r.CancelledFirst)
	require.Equal(t, map[string]string{"hxokxshortstop": "live", "hxokxlongstop1": "live", "manualstop1": "live"}, algoStates(fake))

	r, err = v.Place(ctx(t), exchange.Order{ClientOrderID: "hxokxwhole1", Symbol: "BTCUSDT", Action: "close", OrderType: "market", Quantity: d("0.03")})
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.True(t, fake.Position(swapInst).IsZero())
	require.Len(t, r.CancelledFirst, 1)
	require.Equal(t, "hxokxlongstop1", r.CancelledFirst[0].ClientOrderID)
	require.Equal(t, "sell", r.CancelledFirst[0].Side)
	require.Equal(t, "0.02", r.CancelledFirst[0].Remaining, "in BTC, as hoox counts it")
	require.True(t, r.CancelledFirst[0].PlacedByHoox)
	require.Equal(t, map[string]string{"hxokxshortstop": "live", "hxokxlongstop1": "canceled", "manualstop1": "live"}, algoStates(fake))
}

// entryBesideClose opens another long as a close goes out: the close read
// the position before, so it sells only the old amount; the new long and
// its trailing stop are placed a second later on OKX's clock.
type entryBesideClose struct {
	fake *okxfake.Server
	v    *okx.Venue
	t    *testing.T
	done bool
}

func (e *entryBesideClose) RoundTrip(req *http.Request) (*http.Response, error) {
	if !e.done && req.Method == http.MethodPost && req.URL.Path == "/api/v5/trade/order" {
		e.done = true
		e.fake.Advance(time.Second)
		e.fake.SetPosition(swapInst, e.fake.Position(swapInst).Add(d("2")))
		r, err := e.v.Place(req.Context(), trailingExit("hxokxnewstop", "0.02", "1.5"))
		if err != nil || r.Status != exchange.StatusOpen {
			e.t.Errorf("the new long's trailing stop: %v %s", err, r.Reason)
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

// A close of the whole long that leaves a long open because another
// entry filled beside it cancels only the stops that protected the long
// it closed (created before it began), not the new long's.
func TestSwapWholeCloseKeepsTheTrailingStopOfALongOpenedBesideIt(t *testing.T) {
	t.Parallel()
	e := &entryBesideClose{t: t}
	v, fake := setup(t, okx.MarketSwap, func(c *okx.Config) { c.HTTPClient = &http.Client{Transport: e} })
	e.fake, e.v = fake, v
	fake.SetPosition(swapInst, d("3"))
	r, err := v.Place(ctx(t), trailingExit("hxokxoldstop", "0.03", "1.5"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)
	// The close begins a second after the old stop (placed in the same
	// millisecond, hoox's estimate of OKX's clock may put the close's
	// start before the stop's cTime).
	fake.Advance(time.Second)

	r, err = v.Place(ctx(t), exchange.Order{ClientOrderID: "hxokxwhole2", Symbol: "BTCUSDT", Action: "close", OrderType: "market", Quantity: d("0.03")})
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.Equal(t, "2", fake.Position(swapInst).String(), "the new long is open")
	require.Equal(t, map[string]string{"hxokxoldstop": "canceled", "hxokxnewstop": "live"}, algoStates(fake))
	require.Len(t, r.CancelledFirst, 1)
}
