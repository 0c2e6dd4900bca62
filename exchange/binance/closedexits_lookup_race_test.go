package binance_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
)

// The seventeenth round's race (TestWholeCloseKeepsTheStopLossOfALongOpenedAfterItsPositionRead):
// a close of the whole long reads the position (0.01), a second long
// fills and its stop-loss is placed, and only then does the close's
// request reach Binance; the close sells the old 0.01 and the new long
// stays open. This time the close's answer is lost (the connection drops
// after Binance booked and filled it), so hoox learns the fill from a
// lookup — the sender's retry here, the reconcile or the sweeper alike.
// Lookup bounds "the exits of the position the close closed" by the
// close's creation time, which is after the new long's stop-loss: the new
// long's stop-loss is cancelled and the open long left unprotected —
// exactly what Place's own answer (bounded by its stamp before the
// position read) keeps.
func TestWholeCloseAdoptedAfterALostAnswerKeepsTheStopLossOfALongOpenedAfterItsPositionRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	closing := closeOrder("close")
	slNew := newID()
	var b *testBundle
	b = setup(t, binance.MarketFutures, func(c *binance.Config) {
		c.HTTPClient = &http.Client{Transport: beforeOrder{clientID: closing.ClientOrderID, once: &sync.Once{}, hook: func() {
			openLongWithStopLoss(t, b, slNew)
			// The close's request reaches Binance a moment after the new
			// long's stop-loss was booked, and its answer is lost.
			b.fake.Advance(50 * time.Millisecond)
			b.fake.Inject(binancefake.Fault{Kind: binancefake.FaultDropAfterAccept})
		}}}
	})
	b.cfg.HTTPClient = nil
	b.fake.SetPosition("BTCUSDT", d("0.01"))
	slOld := newID()
	r, err := b.venue.Place(ctx, futuresExit(slOld, "sell", exchange.RoleStopLoss, "48000"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)

	_, err = b.venue.Place(ctx, closing)
	b.requireUnknownOnce(t, err, closing)
	require.Equal(t, "0.01", b.fake.Position("BTCUSDT").String(), "the close sold the old 0.01; the new long is still open")

	r = b.requireAdopted(t, ctx, closing, true)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.Equal(t, "NEW", algoStatus(b)[slNew],
		"the stop-loss of the long that is still open must not be cancelled by the adopted close that did not flatten it")
}
