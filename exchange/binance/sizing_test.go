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

// A spot market buy of 100 % of the free USDT is sized at the best ask
// (bookTicker), not at the last price, and leaves MarketBuyHeadroomBIPS of
// its cost unspent: Binance fills a market buy at the asks and refuses it
// whole when the balance cannot pay for all of it
// (faqs/market_orders_faq.md: "If you do not have sufficient balance for
// the order to be completely filled, the order will be rejected."). Sized
// at the last price with the whole balance, the buy README promises ("100
// % never asks for more than the balance") is refused for good whenever
// the ask is a tick above it, or moves a tick before the fill. A smaller
// share, never near the balance, is sized as asked.
func TestSpotHundredPercentMarketBuyIsNotRefusedForAOneTickMove(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketSpot)
	b.fake.SetBalance("USDT", d("3000"))
	// Last trade 3000; the best ask one tick above (ETHUSDT tick 0.01).
	b.fake.SetAsk("ETHUSDT", d("3000.01"))
	size := func(percent string) exchange.Order {
		o := marketOrder("buy", percent)
		o.Symbol = "ETHUSDT"
		facts, err := b.venue.SizingFacts(ctx, o, exchange.SizingNeed{Price: true, Balance: true})
		require.NoError(t, err)
		require.Equal(t, "3000.01", facts.Price.String(), "the best ask")
		sized, _, reason := exchange.Resolve(exchange.QuantityPercentOfBalance, o, facts)
		require.Empty(t, reason)
		return sized
	}
	require.Equal(t, "0.49", size("50").Quantity.String(), "1500 USDT at 3000.01, down to the 0.01 step")
	sized := size("100")
	require.Equal(t, "0.99", sized.Quantity.String(), "3000 USDT less 0.5 %, at 3000.01, down to the 0.01 step")

	// The ask moves up another tick before the buy reaches the book.
	b.fake.SetAsk("ETHUSDT", d("3000.02"))
	r, err := b.venue.Place(ctx, sized)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status,
		"a buy of 100 %% of the balance refused for a one-tick move: %s", r.Reason)
	require.Equal(t, "3000.02", r.FillPrice.Decimal.String())

	// A sell is still sized at the last price: only a market buy takes
	// the asks.
	sell := marketOrder("sell", "1")
	sell.Symbol = "ETHUSDT"
	facts, err := b.venue.SizingFacts(ctx, sell, exchange.SizingNeed{Price: true})
	require.NoError(t, err)
	require.Equal(t, "3000", facts.Price.String())
}
