package bybit_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
)

// ensureLeverage now reads any ClassUnknown answer carried in an HTTP 200
// as a refusal for good ("an untabled code"), but ClassUnknown also holds
// the TABLED transient codes — 10016 "server error or service restarting"
// and 10000 "server timeout" (ErrorTable, docs/venues/bybit.md) — which
// Bybit answers with HTTP 200 and retCode. A set-leverage that hit Bybit
// restarting settles the entry rejected (422, the trace settled; a resend
// is a duplicate of the rejection), though nothing refused it: the order
// the strategy asked for is never placed. Before this round it was
// unreachable (503, nothing placed, resend).
func TestTransientLeverageErrorIsNotARefusal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		code int
		msg  string
	}{{10016, "Server error."}, {10000, "Server Timeout"}} {
		ctx := context.Background()
		b := setup(t, bybit.MarketLinear)
		b.fake.Inject(bybitfake.PathLeverage, 1, bybitfake.Refuse(c.code, c.msg))
		o := marketOrder("BTCUSDT", "buy", "0.01")
		o.Leverage = 7
		r, err := b.venue.Place(ctx, o)
		require.Zero(t, b.fake.Requests(bybitfake.PathCreate), "nothing placed")
		require.NotEqualf(t, exchange.StatusRejected, r.Status, "retCode %d on set-leverage (a transient server error) rejected the order for good: %s", c.code, r.Reason)
		require.ErrorIs(t, err, exchange.ErrUnreachable)
	}
}
