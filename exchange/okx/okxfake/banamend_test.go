package okxfake_test

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/okx/okxfake"
)

// A spot market buy sized in the base currency that the quote balance
// cannot cover — with the 5 % OKX freezes on top of a market order — is
// filled for the most the balance can buy when banAmend is absent
// ("the system will execute the order according to your maximum buyable
// … quantity", Post_Place_Order.md), and refused with 51008 when banAmend
// is true ("system will not amend and reject the market order").
func TestFakeAmendsASpotMarketBuyToTheBalanceUnlessBanAmend(t *testing.T) {
	t.Parallel()
	f := okxfake.New(t, okxfake.Options{})
	f.SetPrice("ETHUSDT", decimal.NewFromInt(3000))
	f.SetBalance("ETH", decimal.Zero)
	f.SetBalance("USDT", decimal.NewFromInt(1575)) // 0.5 ETH at 3000, plus 5 %
	now := f.Now()
	buy := func(id, extra string) string {
		return send(t, f, f.APISecret(), now, now.Add(time.Minute),
			`{"instId":"ETH-USDT","tdMode":"cash","clOrdId":"`+id+`","side":"buy","ordType":"market","sz":"1","tgtCcy":"base_ccy"`+extra+`}`)
	}

	require.Equal(t, "51008", buy("hxban1", `,"banAmend":true`))
	require.Empty(t, f.Orders(), "nothing booked")
	require.Equal(t, "1575", f.Balance("USDT").String())

	require.Equal(t, "0", buy("hxban2", ""))
	orders := f.Orders()
	require.Len(t, orders, 1)
	require.Equal(t, "filled", orders[0].State)
	require.Equal(t, "0.5", orders[0].AccFillSz.String(), "amended to the maximum buyable")
	require.Equal(t, "0.5", f.Balance("ETH").String())

	// Covered, freeze included: taken as asked.
	f.SetBalance("USDT", decimal.NewFromInt(3150))
	require.Equal(t, "0", buy("hxban3", `,"banAmend":true`))
	require.Equal(t, "1.5", f.Balance("ETH").String())
}
