package binance_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
)

// failAlgoCancel answers Binance's DELETE /fapi/v1/algoOrder for one
// clientAlgoId with a server error, sending nothing on.
type failAlgoCancel struct {
	id string
}

func (f failAlgoCancel) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodDelete && strings.HasSuffix(r.URL.Path, "/algoOrder") {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		if strings.Contains(string(body), "clientAlgoId="+f.id) {
			return &http.Response{StatusCode: http.StatusInternalServerError, Header: http.Header{}, Request: r,
				Body: io.NopCloser(strings.NewReader(`{"code":-1000,"msg":"An unknown error occurred while processing the request."}`))}, nil
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
	}
	return http.DefaultTransport.RoundTrip(r)
}

// futuresExit is hoox's USDⓈ-M exit of role on side at trigger, for 0.01
// BTCUSDT.
func futuresExit(id, side, role, trigger string) exchange.Order {
	o := exchange.Order{ClientOrderID: id, Symbol: "BTCUSDT", Action: "close", Side: side, ReduceOnly: true,
		OrderType: "market", Quantity: d("0.01"), Exit: role}
	a := &exchange.Attached{Price: decimal.NewNullDecimal(d(trigger))}
	if role == exchange.RoleTakeProfit {
		o.TakeProfit = a
	} else {
		o.StopLoss = a
	}
	return o
}

// On USDⓈ-M hoox's take-profit and stop-loss rest as reduce-only algo
// orders, which neither block a close (-2022) nor end with the position.
// A close of part of the long leaves them protecting what is left; a
// close of the whole long, once filled, cancels hoox's exits of its side
// and reports them (CancelledFirst) — not an algo order placed by hand,
// nor one of the other side. A cancel that fails does not fail the
// filled close: it is logged, and that exit is not reported cancelled.
func TestFuturesWholeCloseCancelsHooxExitsOfItsSide(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tp, sl := newID(), newID()
	b := setup(t, binance.MarketFutures, func(c *binance.Config) {
		c.HTTPClient = &http.Client{Transport: failAlgoCancel{id: tp}}
	})
	b.fake.SetPosition("BTCUSDT", d("0.02"))
	other := newID()
	for _, o := range []exchange.Order{
		futuresExit(tp, "sell", exchange.RoleTakeProfit, "51000"),
		futuresExit(sl, "sell", exchange.RoleStopLoss, "49000"),
		futuresExit("manual-sl", "sell", exchange.RoleStopLoss, "48000"),
		futuresExit(other, "buy", exchange.RoleStopLoss, "52000"),
	} {
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)
	}
	status := func() map[string]string {
		out := map[string]string{}
		for _, a := range b.fake.AlgoOrders() {
			out[a.ClientAlgoID] = a.Status
		}
		return out
	}

	half := closeOrder("close")
	half.Partial, half.Quantity = true, d("0.01")
	half.Sizing = &exchange.Sizing{Type: exchange.QuantityPercentOfPosition, Asked: "50"}
	r, err := b.venue.Place(ctx, half)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.Empty(t, r.CancelledFirst, "half the long is left: its exits still protect it")
	require.Equal(t, map[string]string{tp: "NEW", sl: "NEW", "manual-sl": "NEW", other: "NEW"}, status())

	r, err = b.venue.Place(ctx, closeOrder("close"))
	require.NoError(t, err, "a cancel that failed does not fail the filled close")
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.True(t, b.fake.Position("BTCUSDT").IsZero())
	require.Equal(t, map[string]string{tp: "NEW", sl: "CANCELED", "manual-sl": "NEW", other: "NEW"}, status(),
		"hoox's exits of the closed side cancelled; the one Binance failed to cancel, the hand-placed one and the other side's left")
	require.Len(t, r.CancelledFirst, 1)
	require.Equal(t, exchange.CancelledOrder{ClientOrderID: sl, ExchangeOrderID: r.CancelledFirst[0].ExchangeOrderID, Side: "sell",
		Remaining: "0.01", PlacedByHoox: true}, r.CancelledFirst[0])
	require.Contains(t, b.logs.String(), "a resting exit of its side was not cancelled")
	require.Contains(t, b.logs.String(), tp)
}
