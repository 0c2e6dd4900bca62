package okxfake_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/okx/okxfake"
)

// OKX counts place-order requests per instrument over 2 seconds: past the
// limit one is answered 50011 and books nothing, while another
// instrument's placement is taken; once the window has passed the
// instrument takes orders again.
func TestFakeLimitsPlacementsPerInstrument(t *testing.T) {
	t.Parallel()
	f := okxfake.New(t, okxfake.Options{})
	f.SetOrderRateLimit(1)
	order := func(id, inst, sz string) string {
		now := f.Now()
		return send(t, f, f.APISecret(), now, now.Add(time.Minute),
			`{"instId":"`+inst+`","tdMode":"cash","clOrdId":"`+id+`","side":"sell","ordType":"market","sz":"`+sz+`","tgtCcy":"base_ccy"}`)
	}
	require.Equal(t, "0", order("hxrate1", "BTC-USDT", "0.001"))
	require.Equal(t, "50011", order("hxrate2", "BTC-USDT", "0.001"))
	require.Equal(t, "0", order("hxrate3", "ETH-USDT", "0.01"), "another instrument is counted apart")
	require.Len(t, f.Orders(), 2)
	f.Advance(okxfake.OrderRateWindow)
	require.Equal(t, "0", order("hxrate4", "BTC-USDT", "0.001"), "the window has passed")
	require.Equal(t, 4, f.Placements())
}
