package okx_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
)

// bodies records the JSON bodies the adapter POSTs to path.
type bodies struct {
	mu   sync.Mutex
	path string
	got  []map[string]any
	next http.RoundTripper
}

func (b *bodies) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && r.URL.Path == b.path && r.Body != nil {
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(raw))
		var m map[string]any
		if json.Unmarshal(raw, &m) == nil {
			b.mu.Lock()
			b.got = append(b.got, m)
			b.mu.Unlock()
		}
	}
	return b.next.RoundTrip(r)
}

// OKX spot market orders go out with tgtCcy=base_ccy (hoox's quantity is
// the base currency) and banAmend=true. Post_Place_Order.md: "If you use
// the Base Currency quantity for buy market orders …: 1. If the quantity
// you enter is greater than what you can buy or sell, the system will
// execute the order according to your maximum buyable or sellable
// quantity", unless banAmend: "If true, system will not amend and reject
// the market order if user does not have sufficient funds" (default
// false). Without it, a buy of 1 ETH with funds for 0.5 fills 0.5 ETH — a
// size the signal never asked for, where Binance and Bybit refuse.
func TestSpotMarketBuyIsRefusedNotAmendedToTheBalance(t *testing.T) {
	t.Parallel()
	rec := &bodies{path: "/api/v5/trade/order", next: http.DefaultTransport}
	v, fake := setup(t, okx.MarketSpot, func(c *okx.Config) { c.HTTPClient = &http.Client{Transport: rec} })
	fake.SetBalance("ETH", d("0"))
	fake.SetBalance("USDT", d("1500")) // 0.5 ETH at 3000
	r, err := v.Place(ctx(t), order("hxamend1", "ETHUSDT", "buy", "1"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusRejected, r.Status)
	require.Contains(t, r.Reason, "Insufficient USDT")
	require.True(t, fake.Balance("ETH").IsZero(), "nothing bought")
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.got, 1)
	require.Equal(t, "base_ccy", rec.got[0]["tgtCcy"])
	require.Equal(t, true, rec.got[0]["banAmend"], "sent as %v", rec.got[0])
}

// OKX freezes 5 % more quote than a market buy's size at the last price
// (Post_Place_Order.md, ordType market), and with banAmend a buy the
// balance cannot cover so is refused: a percent_of_balance market buy of
// 100 % is sized from the available quote over 1.05, and fills.
func TestSpotMarketBuyOfTheWholeBalanceLeavesRoomForOKXsFreeze(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSpot)
	fake.SetBalance("ETH", d("0"))
	fake.SetBalance("USDT", d("1500"))
	o := order("hxpct100", "ETHUSDT", "buy", "100")
	facts, err := v.SizingFacts(ctx(t), o, exchange.Need(exchange.QuantityPercentOfBalance, o))
	require.NoError(t, err)
	sized, _, reason := exchange.Resolve(exchange.QuantityPercentOfBalance, o, facts)
	require.Empty(t, reason)
	require.Equal(t, "0.47619", sized.Quantity.String(), "1500 / 1.05 / 3000, down to the lot")

	r, err := v.Place(ctx(t), sized)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.Equal(t, "0.47619", fake.Balance("ETH").String())
}
