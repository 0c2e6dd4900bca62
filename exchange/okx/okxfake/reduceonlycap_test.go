package okxfake_test

import (
	"net/http"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/okx/okxfake"
)

// OKX caps the reduce-only orders on an instrument (error page: "51165
// The number of {instrument} reduce-only orders reached the upper limit of
// {upLimit}. Cancel some orders to proceed."; the number is not given):
// past the cap a reduce-only trailing stop is refused and not booked; a
// cancelled one frees its place.
func TestFakeCapsReduceOnlyAlgoOrdersPerInstrument(t *testing.T) {
	t.Parallel()
	f := okxfake.New(t, okxfake.Options{})
	f.SetPosition("BTC-USDT-SWAP", decimal.NewFromInt(5))
	f.SetMaxReduceOnly(1)
	trail := func(id string) (string, []map[string]any) {
		return algoCall(t, f, http.MethodPost, okxfake.PathAlgo,
			`{"instId":"BTC-USDT-SWAP","tdMode":"cross","side":"sell","ordType":"move_order_stop","sz":"1","reduceOnly":true,"algoClOrdId":"`+id+`","callbackRatio":"0.01"}`)
	}
	code, _ := trail("hxcap1")
	require.Equal(t, "0", code)
	code, data := trail("hxcap2")
	require.Equal(t, "51165", code, "a second reduce-only order over a cap of one")
	require.Equal(t, "The number of BTC-USDT-SWAP reduce-only orders reached the upper limit of 1. Cancel some orders to proceed.", data[0]["sMsg"])
	require.Len(t, f.AlgoOrders(), 1, "nothing refused is booked")

	code, _ = algoCall(t, f, http.MethodPost, okxfake.PathCancelAlgo, `[{"algoId":"`+f.AlgoOrders()[0].AlgoID+`","instId":"BTC-USDT-SWAP"}]`)
	require.Equal(t, "0", code)
	code, _ = trail("hxcap2")
	require.Equal(t, "0", code, "the cancelled one no longer counts")
}
