package binance_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
)

// hedgeBothSides puts a proxy in front of the fake that answers GET
// /fapi/v2/positionRisk as USDⓈ-M does for a hedge-mode account holding a
// long and a short of the same size on BTCUSDT (Position Information V2,
// "For Hedge position mode": one LONG and one SHORT entry per symbol).
func hedgeBothSides(t *testing.T, b *testBundle) *binance.Venue {
	t.Helper()
	target, err := url.Parse(b.fake.URL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/fapi/v2/positionRisk" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `[{"symbol":"BTCUSDT","positionAmt":"1.000","entryPrice":"50000","markPrice":"50000","unRealizedProfit":"0","liquidationPrice":"0","leverage":"20","marginType":"cross","positionSide":"LONG","updateTime":0},`+
				`{"symbol":"BTCUSDT","positionAmt":"-1.000","entryPrice":"50000","markPrice":"50000","unRealizedProfit":"0","liquidationPrice":"0","leverage":"20","marginType":"cross","positionSide":"SHORT","updateTime":0}]`)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cfg := b.cfg
	cfg.BaseURL = srv.URL
	v, err := binance.New(cfg)
	require.NoError(t, err)
	return v
}

// A percent_of_position exit is sized before the intent from SizingFacts,
// which sums the hedge-mode LONG and SHORT entries into one signed amount
// and never says the account is in hedge mode: a long of 1 and a short of
// 1 once read as no position, and the gateway answered "no position to
// close" (422) — not the hedge-mode refusal Place gives (ReasonHedgeMode)
// — to a trader holding two open positions.
func TestFuturesHedgeModeSizingSaysHedgeMode(t *testing.T) {
	t.Parallel()
	b := setup(t, binance.MarketFutures)
	v := hedgeBothSides(t, b)
	o := closeOrder("close")
	o.Quantity = d("50")
	facts, err := v.SizingFacts(context.Background(), o, exchange.Need(exchange.QuantityPercentOfPosition, o))
	require.NoError(t, err)
	_, _, reason := exchange.Resolve(exchange.QuantityPercentOfPosition, o, facts)
	require.Equal(t, binance.ReasonHedgeMode, reason, "sized from the summed hedge-mode position %s", facts.Position)
}
