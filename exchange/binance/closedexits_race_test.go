package binance_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
)

// beforeOrder runs hook once, right before the order request carrying
// clientID reaches Binance.
type beforeOrder struct {
	clientID string
	once     *sync.Once
	hook     func()
}

func (b beforeOrder) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/fapi/v1/order") {
		body := ""
		if r.Body != nil {
			raw, err := io.ReadAll(r.Body)
			if err != nil {
				return nil, err
			}
			body = string(raw)
			r.Body = io.NopCloser(strings.NewReader(body))
		}
		if strings.Contains(body+"&"+r.URL.RawQuery, "newClientOrderId="+b.clientID) {
			b.once.Do(b.hook)
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A close of "the whole position" reads the position (0.01) and sends a
// reduce-only SELL of that amount. A second long of the same symbol (the
// strategy's next entry, or another strategy's: nothing serialises a
// symbol's signals) fills between that read and the close's send, and its
// stop-loss is placed. The close fills 0.01 and leaves the new 0.01 long
// open: the new long's stop-loss, created after the close began, is kept
// (cancelling every hoox SELL exit of the symbol left it unprotected).
func TestWholeCloseKeepsTheStopLossOfALongOpenedAfterItsPositionRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	closing := closeOrder("close")
	slNew := newID()
	var b *testBundle
	b = setup(t, binance.MarketFutures, func(c *binance.Config) {
		c.HTTPClient = &http.Client{Transport: beforeOrder{clientID: closing.ClientOrderID, once: &sync.Once{}, hook: func() {
			openLongWithStopLoss(t, b, slNew)
		}}}
	})
	b.cfg.HTTPClient = nil
	b.fake.SetPosition("BTCUSDT", d("0.01"))
	slOld := newID()
	r, err := b.venue.Place(ctx, futuresExit(slOld, "sell", exchange.RoleStopLoss, "48000"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)

	r, err = b.venue.Place(ctx, closing)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.Equal(t, "0.01", b.fake.Position("BTCUSDT").String(), "the close sold the old 0.01; the new long is still open")
	status := map[string]string{}
	for _, a := range b.fake.AlgoOrders() {
		status[a.ClientAlgoID] = a.Status
	}
	require.Equal(t, "NEW", status[slNew], "the stop-loss of the long that is still open must not be cancelled by a close that did not flatten it")
}

// beforeAlgoList runs hook once, right before the first GET
// /fapi/v1/openAlgoOrders reaches Binance.
type beforeAlgoList struct {
	once *sync.Once
	hook func()
}

func (b beforeAlgoList) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/openAlgoOrders") {
		b.once.Do(b.hook)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A close of the whole long fills and flattens it. Before its listing of
// the open algo orders runs, the strategy's next long (a reversal sent as
// "close" then "long" in the same bar, or another strategy's long) fills
// and its stop-loss is placed: the closed long's stop-loss is cancelled,
// the new long's kept (it never protected the position the close closed).
func TestWholeCloseKeepsTheStopLossOfTheNextLongPlacedBeforeItsListing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	slNew := newID()
	var b *testBundle
	b = setup(t, binance.MarketFutures, func(c *binance.Config) {
		c.HTTPClient = &http.Client{Transport: beforeAlgoList{once: &sync.Once{}, hook: func() {
			openLongWithStopLoss(t, b, slNew)
		}}}
	})
	b.cfg.HTTPClient = nil
	b.fake.SetPosition("BTCUSDT", d("0.01"))
	slOld := newID()
	r, err := b.venue.Place(ctx, futuresExit(slOld, "sell", exchange.RoleStopLoss, "48000"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)

	r, err = b.venue.Place(ctx, closeOrder("close"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.Equal(t, "0.01", b.fake.Position("BTCUSDT").String(), "the new long is open")
	status := map[string]string{}
	for _, a := range b.fake.AlgoOrders() {
		status[a.ClientAlgoID] = a.Status
	}
	require.Equal(t, "CANCELED", status[slOld], "the closed long's stop-loss is cancelled")
	require.Equal(t, "NEW", status[slNew], "the next long's stop-loss, placed after the close filled, must not be cancelled by it")
}

// openLongWithStopLoss is the entry beside the close: a new long of 0.01
// filled and its stop-loss slID placed (at 49000), through a venue of its
// own on b's fake, a moment after (the fake's clock moves a second on: the
// entry's own claim, intent and send take milliseconds).
func openLongWithStopLoss(t *testing.T, b *testBundle, slID string) {
	t.Helper()
	ctx := context.Background()
	b.fake.Advance(time.Second)
	other, err := binance.New(b.cfg)
	require.NoError(t, err)
	entry := marketOrder("buy", "0.01")
	entry.Action = "long"
	r, err := other.Place(ctx, entry)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	r, err = other.Place(ctx, futuresExit(slID, "sell", exchange.RoleStopLoss, "49000"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)
}
