package okx_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
	"github.com/hoox/hoox/exchange/okx/okxfake"
)

// OKX lists at most 100 untriggered algo orders per request, newest first,
// and pages back with after (Get_Algo_Order_List.md). A trader who placed
// 100 trailing stops of their own by hand after hoox's stop would push
// hoox's off the first page: a close of the whole long that read only that
// page left hoox's stop live, to sell the next long.
func TestSwapWholeCloseCancelsHooxsStopBeyondTheFirstPageOfTheListing(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSwap)
	fake.SetPosition(swapInst, d("3"))
	r, err := v.Place(ctx(t), trailingExit("hxokxpagedstop1", "0.03", "1.5"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)
	for i := range 100 {
		r, err := v.Place(ctx(t), trailingExit(fmt.Sprintf("manual%d", i), "0.01", "2"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)
	}

	r, err = v.Place(ctx(t), exchange.Order{ClientOrderID: "hxokxpagedclose", Symbol: "BTCUSDT", Action: "close", OrderType: "market", Quantity: d("0.03")})
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.True(t, fake.Position(swapInst).IsZero())
	states := algoStates(fake)
	require.Equal(t, "canceled", states["hxokxpagedstop1"], "hoox's stop, on the listing's second page, was left live")
	require.Equal(t, "live", states["manual0"], "the trader's own stops are theirs")
	require.Equal(t, []string{"hxokxpagedstop1"}, okxCancelledIDs(r))
	require.Equal(t, 3, fake.Requests(okxfake.PathAlgoPending), "two pages of trailing stops, one of TP/SL")
}
