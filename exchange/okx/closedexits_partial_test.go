package okx_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
	"github.com/hoox/hoox/exchange/okx/okxfake"
)

// cutShortClose makes OKX execute the market close clOrdID only in part
// (filled contracts of it) and cancel the rest, as OKX does with a swap
// market order that meets its price limit band ("market order will be
// placed to order book with most aggressive price allowed by Price Limit
// Mechanism", Post_Place_Order.md ordType; hoox's report() reads such an
// order, canceled with something filled, as filled "cut short"). The fake
// fills market orders in full, so the transport puts back the contracts
// the close did not sell and shows the order as OKX would: canceled, with
// accFillSz the part that executed.
type cutShortClose struct {
	fake         *okxfake.Server
	clOrdID      string
	filled, left string
	placed       bool
}

func (c *cutShortClose) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return res, err
	}
	switch {
	case req.Method == http.MethodPost && req.URL.Path == "/api/v5/trade/order" && !c.placed:
		body, _ := io.ReadAll(res.Body)
		res.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(c.clOrdID)) {
			c.placed = true
			c.fake.SetPosition(swapInst, d(c.left))
		}
	case req.Method == http.MethodGet && req.URL.Path == "/api/v5/trade/order" && c.placed:
		body, _ := io.ReadAll(res.Body)
		var env map[string]any
		if json.Unmarshal(body, &env) == nil {
			if data, ok := env["data"].([]any); ok && len(data) == 1 {
				if o, ok := data[0].(map[string]any); ok && o["clOrdId"] == c.clOrdID {
					o["state"], o["accFillSz"] = "canceled", c.filled
					body, _ = json.Marshal(env)
				}
			}
		}
		res.Body = io.NopCloser(bytes.NewReader(body))
		res.ContentLength = int64(len(body))
		res.Header.Del("Content-Length")
	}
	return res, nil
}

// A close of the whole long that OKX executed only in part (the rest of
// the market order cancelled at the price limit) leaves part of the long
// open — the same long, not an entry beside the close. Its trailing stop
// still protects that rest and must stay live (as Binance USDⓈ-M's whole
// close that filled only partly "keeps the exits of what is left",
// 3a5e598). cancelClosedExits reads "not flat" as "an entry filled
// beside the close" and cancels every exit created before the close
// began: the rest of the long is left without its stop, and the close
// answers the stop cancelled.
func TestSwapWholeCloseCutShortKeepsTheTrailingStopOfWhatIsLeft(t *testing.T) {
	t.Parallel()
	c := &cutShortClose{clOrdID: "hxokxcutshort1", filled: "2", left: "1"}
	v, fake := setup(t, okx.MarketSwap, func(cfg *okx.Config) { cfg.HTTPClient = &http.Client{Transport: c} })
	c.fake = fake
	fake.SetPosition(swapInst, d("3")) // 0.03 BTC long
	r, err := v.Place(ctx(t), trailingExit("hxokxlongstop9", "0.03", "1.5"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)

	r, err = v.Place(ctx(t), exchange.Order{ClientOrderID: c.clOrdID, Symbol: "BTCUSDT", Action: "close", OrderType: "market", Quantity: d("0.03")})
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.Equal(t, "0.02", r.FilledQuantity.String(), "the close sold 2 of the 3 contracts")
	require.Equal(t, "1", fake.Position(swapInst).String(), "what is left of the same long")
	require.Empty(t, r.CancelledFirst, "the close cancelled the stop of the long it left open")
	require.Equal(t, map[string]string{"hxokxlongstop9": "live"}, algoStates(fake), "the rest of the long is left without its trailing stop")
}
