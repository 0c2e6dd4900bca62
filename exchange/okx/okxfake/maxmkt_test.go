package okxfake_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/okx/okxfake"
)

// A market order above the instrument's maxMktSz is refused with 51202
// ("Market order amount exceeds the maximum amount.") and books nothing;
// at the maximum, or as a limit order, it is taken. The instruments list
// reports maxMktSz.
func TestFakeRefusesAMarketOrderAboveMaxMktSz(t *testing.T) {
	t.Parallel()
	f := okxfake.New(t, okxfake.Options{})
	f.SetSymbol(okxfake.Instrument{InstType: okxfake.InstSwap, InstID: "BTC-USDT-SWAP", SettleCcy: "USDT", CtVal: decimal.RequireFromString("0.01"),
		TickSz: decimal.RequireFromString("0.1"), LotSz: decimal.RequireFromString("0.01"), MinSz: decimal.RequireFromString("0.01"),
		MaxMktSz: decimal.NewFromInt(10)})
	f.SetPosition("BTC-USDT-SWAP", decimal.NewFromInt(25))
	now := f.Now()
	order := func(id, ordType, sz string) string {
		px := ""
		if ordType == "limit" {
			px = `,"px":"70000"`
		}
		return send(t, f, f.APISecret(), now, now.Add(time.Minute),
			`{"instId":"BTC-USDT-SWAP","tdMode":"cross","clOrdId":"`+id+`","side":"sell","ordType":"`+ordType+`","sz":"`+sz+`","reduceOnly":true`+px+`}`)
	}
	require.Equal(t, "51202", order("hxmax1", "market", "10.01"))
	require.Empty(t, f.Orders(), "nothing booked")
	require.Equal(t, "0", order("hxmax2", "market", "10"), "at the maximum")
	require.Equal(t, "0", order("hxmax3", "limit", "15"), "a limit order is not bound by maxMktSz")
	_, data := algoCall(t, f, http.MethodGet, "/api/v5/account/instruments?instType=SWAP", "")
	var max string
	for _, in := range data {
		if in["instId"] == "BTC-USDT-SWAP" {
			max, _ = in["maxMktSz"].(string)
		}
	}
	require.Equal(t, "10", max)
}
