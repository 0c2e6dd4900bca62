package okx_test

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
	"github.com/hoox/hoox/exchange/okx/okxfake"
)

// OKX's accepted cancel "only means that your cancellation request has
// been accepted" (Post_Cancel_Order.md): the order stays live while the
// cancel is under way, and a second cancel meanwhile is refused 51410
// ("already in canceling status", Error_Code/Rest_API/Public.md). The
// repeat — a trader's retry — is answered as the first was (the order as
// OKX shows it: still open), not as a failed venue; once the cancel took
// effect it reports the order cancelled.
func TestCancelRepeatedWhileOKXIsStillCancellingReportsTheOrder(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSwap)
	fake.DelayCancels(time.Minute)
	o := order("hxcancelling", "BTCUSDT", "buy", "0.01")
	o.OrderType, o.Price = "limit", decimal.NewNullDecimal(d("30000"))
	placed, err := v.Place(ctx(t), o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, placed.Status)

	first, err := v.Cancel(ctx(t), o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, first.Status, "accepted, not yet done")

	again, err := v.Cancel(ctx(t), o)
	require.NoError(t, err, "a cancel already under way is no venue failure")
	require.Equal(t, exchange.StatusOpen, again.Status)
	require.Equal(t, placed.ExchangeOrderID, again.ExchangeOrderID)
	require.Equal(t, 2, fake.Requests(okxfake.PathCancel))

	fake.Advance(time.Minute)
	done, err := v.Cancel(ctx(t), o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusCancelled, done.Status)
}
