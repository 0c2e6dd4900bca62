package okx_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
	"github.com/hoox/hoox/exchange/okx/okxfake"
)

// A set-leverage OKX refuses with a code ErrorTable does not list (59102:
// above the instrument's maximum, Error_Code/Rest_API/Account.md) is the
// entry's refusal (422 with OKX's reason), nothing sent. The unlisted code
// once classified unknown, which for a request that places nothing reads
// as an unreachable venue: 503, "nothing was placed, retry", on every
// resend of a signal that can never pass (Binance's and Bybit's
// set-leverage refusals were fixed the same way).
func TestSwapUntabledLeverageRefusalIsRejectedNotUnreachable(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSwap)
	for _, in := range okxfake.DefaultInstruments() {
		if in.InstID == "BTC-USDT-SWAP" {
			in.Lever = 50
			fake.SetSymbol(in)
		}
	}
	o := order("hxlever1", "BTCUSDT", "buy", "0.01")
	o.Leverage = 75
	r, err := v.Place(ctx(t), o)
	require.NotErrorIs(t, err, exchange.ErrUnreachable, "a refused leverage change read as an unreachable venue")
	require.NoError(t, err)
	require.Equal(t, exchange.StatusRejected, r.Status)
	require.Contains(t, r.Reason, "set leverage 75: Leverage exceeds the maximum limit")
	require.Empty(t, fake.Orders(), "nothing sent")
}
