package okx_test

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
)

// rateLimitedListing answers OKX's rate limit (HTTP 429, code 50011,
// "Rate limit reached") to the algo order listings that include ordType,
// as OKX does past "20 requests per 2 seconds" per User ID
// (Get_Algo_Order_List.md: Rate Limit, Rate limit rule: User ID) — each
// whole close lists more than once. times is how many such listings are
// refused (0: all of them); refused counts them.
type rateLimitedListing struct {
	ordType string
	times   int
	refused atomic.Int32
}

func (l *rateLimitedListing) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && req.URL.Path == "/api/v5/trade/orders-algo-pending" &&
		slices.Contains(strings.Split(req.URL.Query().Get("ordType"), ","), l.ordType) &&
		(l.times == 0 || int(l.refused.Load()) < l.times) {
		l.refused.Add(1)
		body := `{"code":"50011","msg":"Rate limit reached. Please refer to API documentation and throttle requests accordingly.","data":[]}`
		return &http.Response{StatusCode: http.StatusTooManyRequests, Status: "429 Too Many Requests", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewBufferString(body)),
			ContentLength: int64(len(body)), Request: req}, nil
	}
	return http.DefaultTransport.RoundTrip(req)
}

// The trailing stops of the closed long were listed (move_order_stop,
// the first listing), but the close's listing of the TP/SL (conditional
// and oco) was rate limited, sent again after the pause, and rate
// limited again. cancelClosedExits returned nothing at the first failed
// listing, so the trailing stop it had already found was left live to
// sell the instrument's next long — what 73fcc63 fixed, undone by a
// failure of a listing that has nothing to do with it.
func TestSwapWholeCloseCancelsTheListedTrailingStopWhenALaterListingFails(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSwap, func(cfg *okx.Config) { cfg.HTTPClient = &http.Client{Transport: &rateLimitedListing{ordType: "oco"}} })
	fake.SetPosition(swapInst, d("3")) // 0.03 BTC long
	r, err := v.Place(ctx(t), trailingExit("hxokxlongstop8", "0.03", "1.5"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)

	r, err = v.Place(ctx(t), exchange.Order{ClientOrderID: "hxokxwhole8", Symbol: "BTCUSDT", Action: "close", OrderType: "market", Quantity: d("0.03")})
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.True(t, fake.Position(swapInst).IsZero())
	require.Equal(t, map[string]string{"hxokxlongstop8": "canceled"}, algoStates(fake),
		"the closed long's trailing stop, listed, is left live because the oco listing failed")
}

// The closed long's attached stop-loss (the conditional algo order OKX
// generated from the entry's attachAlgoOrds) is listed by the close's
// second listing. OKX rate limited it once: the listing is sent again
// once the pause has passed, and the stop-loss is cancelled — left live,
// it has no follow job and would sell the instrument's next long.
func TestSwapWholeCloseListsTheTPSLAgainAfterARateLimit(t *testing.T) {
	t.Parallel()
	l := &rateLimitedListing{ordType: "conditional", times: 1}
	v, fake := setup(t, okx.MarketSwap, func(cfg *okx.Config) { cfg.HTTPClient = &http.Client{Transport: l} })
	entry := order("hxokxentry7", "BTCUSDT", "buy", "0.03")
	entry.Action, entry.StopLoss = "long", at("59000")
	r, err := v.Place(ctx(t), entry)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	sl := okx.AttachedAlgoID("hxokxentry7")
	require.Equal(t, map[string]string{sl: "live"}, algoStates(fake))

	r, err = v.Place(ctx(t), exchange.Order{ClientOrderID: "hxokxwhole7", Symbol: "BTCUSDT", Action: "close", OrderType: "market", Quantity: d("0.03")})
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.True(t, fake.Position(swapInst).IsZero())
	require.Equal(t, int32(1), l.refused.Load(), "the TP/SL listing was rate limited once")
	require.Equal(t, map[string]string{sl: "canceled"}, algoStates(fake),
		"the closed long's stop-loss is left live because its listing was rate limited once")
	require.Len(t, r.CancelledFirst, 1)
	require.Equal(t, sl, r.CancelledFirst[0].ClientOrderID)
}
