package okx_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
)

// A percent_of_position exit on a swap account in hedge mode is refused as
// Place refuses hedge mode (ReasonHedgeMode). In long_short_mode OKX lists
// positions posSide long or short, never net: the net read once found no
// position, and the trader holding one was told "no position to close".
func TestSwapHedgeModeSizingSaysHedgeMode(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSwap)
	fake.SetPosition("BTC-USDT-SWAP", d("3"))
	fake.SetLongShortMode(true) // the long is now the long side's position

	o := exchange.Order{ClientOrderID: "hxhedge1", Symbol: "BTCUSDT", Action: "close", OrderType: "market", Quantity: d("50")}
	facts, err := v.SizingFacts(ctx(t), o, exchange.Need(exchange.QuantityPercentOfPosition, o))
	require.NoError(t, err)
	_, _, reason := exchange.Resolve(exchange.QuantityPercentOfPosition, o, facts)
	require.Equal(t, okx.ReasonHedgeMode, reason)
}
