package okx_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
	"github.com/hoox/hoox/exchange/okx/okxfake"
)

// triggerBeforeCancel lets the price reach a trailing stop just as its
// cancel goes out: the fake triggers the algo order, then receives the
// cancel.
type triggerBeforeCancel struct {
	fake *okxfake.Server
	id   string
}

func (tr *triggerBeforeCancel) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && req.URL.Path == okxfake.PathCancelAlgo {
		_ = tr.fake.TriggerAlgo(tr.id)
	}
	return http.DefaultTransport.RoundTrip(req)
}

// A trailing stop that OKX triggers between the cancel's look-up and the
// cancel itself is refused 51416 ("Order has been triggered and can't be
// canceled", Error_Code/Rest_API/Public.md). The cancel answers what OKX
// then holds — the stop triggered (filled as hoox follows it) — rather
// than a venue failure the trader is told to retry.
func TestTrailingStopTriggeredAsItIsCancelledIsReportedTriggered(t *testing.T) {
	t.Parallel()
	tr := &triggerBeforeCancel{id: "hxokxtrig1"}
	v, fake := setup(t, okx.MarketSwap, func(c *okx.Config) { c.HTTPClient = &http.Client{Transport: tr} })
	tr.fake = fake
	fake.SetPosition("BTC-USDT-SWAP", d("3"))
	o := trailingExit("hxokxtrig1", "0.03", "1.5")
	r, err := v.Place(ctx(t), o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)

	c, err := v.Cancel(ctx(t), o)
	require.NoError(t, err, "a stop that triggered first is no venue failure")
	require.Equal(t, exchange.StatusFilled, c.Status)
	require.Equal(t, r.ExchangeOrderID, c.ExchangeOrderID)
	require.Equal(t, "effective", fake.AlgoOrders()[0].State)
	require.Equal(t, 1, fake.Requests(okxfake.PathCancelAlgo))
}
