package binance_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
)

// A read of the filters that misses the cache is shared by whoever else
// misses it meanwhile, so the caller that started it must not take it
// down when it gives up: the exchangeInfo request runs on, its answer is
// cached, and the next read asks Binance nothing. The fake holds the
// request until the test releases it, after the first caller gave up.
func TestFiltersReadOutlivesTheCallerThatGaveUp(t *testing.T) {
	t.Parallel()
	b := setup(t, binance.MarketFutures)
	const info, release = "/fapi/v1/exchangeInfo", "/test/release"
	counts := b.fake.HoldUntilAsked(info, release)
	entry := exchange.Order{Symbol: "BTCUSDT", Action: "buy", Side: "buy", OrderType: "market", Quantity: d("0.01"),
		StopLoss: &exchange.Attached{Price: decimal.NewNullDecimal(d("45000"))}}

	ctx, giveUp := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := b.venue.ExitCaps(ctx, entry)
		first <- err
	}()
	require.Eventually(t, func() bool { return b.fake.Requests(info) == 1 }, 10*time.Second, time.Millisecond)
	giveUp()
	require.ErrorIs(t, <-first, context.Canceled)

	res, err := http.Get(b.fake.URL + release)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	_, err = b.venue.ExitCaps(context.Background(), entry)
	require.NoError(t, err)
	require.Equal(t, 1, b.fake.Requests(info), "the read the first caller gave up was dropped and asked again")
	held, released := counts()
	require.Equal(t, 1, held)
	require.Equal(t, 1, released)
}
