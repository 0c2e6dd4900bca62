package okxfake_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/okx/okxfake"
)

// The fake refuses attached TP/SL the way OKX's error-code page
// (Error_Code/Rest_API/Public.md) says: on the wrong side of the order
// price (limit) or of the best bid/ask (market: the fake's last price,
// 60000 for BTC-USDT), on a reduce-only order, or without its order price
// (Post_Place_Order.md: "If you fill in this parameter, you should fill in
// the take-profit order price as well").
func TestFakeEnforcesAttachedTPSLRules(t *testing.T) {
	t.Parallel()
	f := okxfake.New(t, okxfake.Options{})
	now := f.Now()
	n := 0
	place := func(side, ordType, algo string, extra string) string {
		n++
		px := ""
		if ordType == "limit" {
			px = `,"px":"59000"`
		}
		body := fmt.Sprintf(`{"instId":"BTC-USDT-SWAP","tdMode":"cross","clOrdId":"hxtpsl%d","side":%q,"ordType":%q,"sz":"1"%s%s,"attachAlgoOrds":[%s]}`,
			n, side, ordType, px, extra, algo)
		return send(t, f, f.APISecret(), now, time.Time{}, body)
	}
	tests := []struct {
		name, side, ordType, algo, extra, code string
	}{
		{"buy market, both sides right", "buy", "market", `{"tpTriggerPx":"61000","tpOrdPx":"-1","slTriggerPx":"59000","slOrdPx":"-1"}`, "", "0"},
		{"buy market tp below the ask", "buy", "market", `{"tpTriggerPx":"59999.9","tpOrdPx":"-1"}`, "", "51050"},
		{"buy market sl above the ask", "buy", "market", `{"slTriggerPx":"60000","slOrdPx":"-1"}`, "", "51051"},
		{"sell market tp above the bid", "sell", "market", `{"tpTriggerPx":"60100","tpOrdPx":"-1"}`, "", "51052"},
		{"sell market sl below the bid", "sell", "market", `{"slTriggerPx":"59000","slOrdPx":"-1"}`, "", "51053"},
		{"buy limit tp below its price", "buy", "limit", `{"tpTriggerPx":"58000","tpOrdPx":"-1"}`, "", "51046"},
		{"buy limit sl above its price", "buy", "limit", `{"slTriggerPx":"59500","slOrdPx":"-1"}`, "", "51047"},
		{"sell limit tp above its price", "sell", "limit", `{"tpTriggerPx":"59500","tpOrdPx":"-1"}`, "", "51048"},
		{"sell limit sl below its price", "sell", "limit", `{"slTriggerPx":"58000","slOrdPx":"-1"}`, "", "51049"},
		{"trigger without its order price", "buy", "market", `{"tpTriggerPx":"61000"}`, "", "51000"},
		{"reduce-only", "sell", "market", `{"slTriggerPx":"61000","slOrdPx":"-1"}`, `,"reduceOnly":true`, "51100"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.code, place(tt.side, tt.ordType, tt.algo, tt.extra), tt.name)
	}
	var held []okxfake.Order
	for _, o := range f.Orders() {
		if !o.TpTriggerPx.IsZero() || !o.SlTriggerPx.IsZero() {
			held = append(held, o)
		}
	}
	require.Len(t, held, 1, "only the accepted order holds its TP/SL")
	require.Equal(t, "61000", held[0].TpTriggerPx.String())
	require.Equal(t, "-1", held[0].SlOrdPx.String())
}

// OKX generates the attached TP/SL as an algo order once the order filled
// ("TP/SL algo order will be generated only when this order is filled",
// Post_Place_Order.md), under the attachAlgoClOrdId sent: oco with both
// triggers, conditional with one, on the other side, for the order's
// size. A resting limit order generates nothing until it fills. Nothing
// documented cancels it when the position closes: it stays live and
// listed.
func TestFakeGeneratesTheAttachedTPSLOnceTheOrderFilled(t *testing.T) {
	t.Parallel()
	f := okxfake.New(t, okxfake.Options{})
	now := f.Now()
	code := send(t, f, f.APISecret(), now, time.Time{}, `{"instId":"BTC-USDT-SWAP","tdMode":"cross","clOrdId":"hxgen1","side":"buy","ordType":"market","sz":"3",
		"attachAlgoOrds":[{"attachAlgoClOrdId":"hxgen1tpsl","tpTriggerPx":"61000","tpOrdPx":"-1","slTriggerPx":"59000","slOrdPx":"-1"}]}`)
	require.Equal(t, "0", code)
	code = send(t, f, f.APISecret(), now, time.Time{}, `{"instId":"BTC-USDT-SWAP","tdMode":"cross","clOrdId":"hxgen2","side":"buy","ordType":"limit","px":"59000","sz":"2",
		"attachAlgoOrds":[{"attachAlgoClOrdId":"hxgen2tpsl","slTriggerPx":"58000","slOrdPx":"-1"}]}`)
	require.Equal(t, "0", code)
	algos := f.AlgoOrders()
	require.Len(t, algos, 1, "the resting limit order generated nothing yet")
	require.Equal(t, "hxgen1tpsl", algos[0].AlgoClOrdID)
	require.Equal(t, "oco", algos[0].OrdType)
	require.Equal(t, "sell", algos[0].Side)
	require.Equal(t, "3", algos[0].Sz.String())
	require.Empty(t, f.TrailingStops())

	require.NoError(t, f.FillOrder("hxgen2"))
	algos = f.AlgoOrders()
	require.Len(t, algos, 2)
	require.Equal(t, "conditional", algos[1].OrdType)
	require.Equal(t, "hxgen2tpsl", algos[1].AlgoClOrdID)

	f.SetPosition("BTC-USDT-SWAP", decimal.Zero) // closed
	c, data := algoCall(t, f, http.MethodGet, okxfake.PathAlgoPending+"?ordType=oco&instId=BTC-USDT-SWAP", "")
	require.Equal(t, "0", c)
	require.Len(t, data, 1, "still live on the flat position")
	require.Equal(t, "61000", data[0]["tpTriggerPx"])
}

// OKX lists conditional and oco algo orders in one request
// ("unlike other ordType which only can use one type, conditional and oco
// both can be used and separated with comma", Get_Algo_Order_List.md,
// stored as qiuham/crypto-api-docs
// docs/okx/order/book/trading-algo-trading-get-algo-order-list.md:53-62);
// any other list of types is refused.
func TestFakeListsConditionalAndOcoInOneRequestOnly(t *testing.T) {
	t.Parallel()
	f := okxfake.New(t, okxfake.Options{})
	now := f.Now()
	for i, algo := range []string{`"tpTriggerPx":"61000","tpOrdPx":"-1","slTriggerPx":"59000","slOrdPx":"-1"`, `"slTriggerPx":"58000","slOrdPx":"-1"`} {
		code := send(t, f, f.APISecret(), now, time.Time{}, fmt.Sprintf(`{"instId":"BTC-USDT-SWAP","tdMode":"cross","clOrdId":"hxlist%d","side":"buy","ordType":"market","sz":"1",
			"attachAlgoOrds":[{"attachAlgoClOrdId":"hxlist%dtpsl",%s}]}`, i, i, algo))
		require.Equal(t, "0", code)
	}
	c, data := algoCall(t, f, http.MethodGet, okxfake.PathAlgoPending+"?ordType=conditional,oco&instId=BTC-USDT-SWAP", "")
	require.Equal(t, "0", c)
	require.Len(t, data, 2)
	for _, types := range []string{"move_order_stop,oco", "conditional,trigger", "oco,oco"} {
		c, _ = algoCall(t, f, http.MethodGet, okxfake.PathAlgoPending+"?ordType="+types+"&instId=BTC-USDT-SWAP", "")
		require.Equal(t, "51000", c, types)
	}
}
