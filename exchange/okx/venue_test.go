package okx_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
	"github.com/hoox/hoox/exchange/okx/okxfake"
)

// setup runs an adapter on a fake; both read the fake's clock, so a test
// can move time without sleeping.
func setup(t *testing.T, m okx.Market, mod ...func(*okx.Config)) (*okx.Venue, *okxfake.Server) {
	t.Helper()
	fake := okxfake.New(t, okxfake.Options{})
	cfg := okx.Config{Market: m, APIKey: fake.APIKey(), APISecret: fake.APISecret(), Passphrase: fake.Passphrase(),
		BaseURL: fake.URL, Now: fake.Now, ConfirmWait: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, f := range mod {
		f(&cfg)
	}
	v, err := okx.New(cfg)
	require.NoError(t, err)
	return v, fake
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func d(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func order(id, symbol, side, qty string) exchange.Order {
	return exchange.Order{ClientOrderID: id, Symbol: symbol, Action: side, Side: side, OrderType: "market", Quantity: d(qty)}
}

func TestConfigNeedsKeySecretAndPassphrase(t *testing.T) {
	t.Parallel()
	_, err := okx.New(okx.Config{APIKey: "k", APISecret: "s"})
	require.ErrorContains(t, err, "passphrase")
	_, err = okx.New(okx.Config{Market: "futures", APIKey: "k", APISecret: "s", Passphrase: "p"})
	require.ErrorContains(t, err, "market")
	cfg := okx.Config{Testnet: true}.WithDefaults()
	require.Equal(t, okx.TestnetBaseURL, cfg.BaseURL)
	require.Equal(t, 17*time.Second, cfg.Expiry+cfg.LookupLag+cfg.ClockMargin)
}

// A swap's quantity is in the base currency for hoox and in contracts on
// the wire: 0.5371 ETH rounds down to the lot (0.01 contract × ctVal 0.1
// = 0.001 ETH) and goes out as 5.37 contracts.
func TestSwapSizesAreContracts(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSwap)
	r, err := v.Place(ctx(t), order("hxswap1", "OKX:ETHUSDT.P", "buy", "0.5371"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.Equal(t, "0.537", r.Quantity.String())
	require.Equal(t, "ETH-USDT-SWAP", r.Symbol)
	held := fake.Orders()
	require.Len(t, held, 1)
	require.Equal(t, "5.37", held[0].Sz.String())
	require.Equal(t, "5.37", fake.Position("ETH-USDT-SWAP").String())

	_, err = v.Place(ctx(t), order("hxswap2", "ETHUSDT", "buy", "0.0009"))
	require.NoError(t, err)
	require.Len(t, fake.Orders(), 1, "below minSz (0.01 contract = 0.001 ETH) is refused before sending")
}

// close flattens the net position with a reduce-only market order; with
// no position there is nothing to send.
func TestSwapCloseFlattensThePosition(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSwap)
	fake.SetPosition("BTC-USDT-SWAP", d("-3"))
	r, err := v.Place(ctx(t), exchange.Order{ClientOrderID: "hxclose1", Symbol: "BTCUSDT", Action: "close", OrderType: "market", Quantity: d("1")})
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.Equal(t, "buy", r.Side)
	require.Equal(t, "0.03", r.Quantity.String(), "3 contracts of 0.01 BTC")
	require.True(t, fake.Position("BTC-USDT-SWAP").IsZero())
	require.True(t, fake.Orders()[0].ReduceOnly)

	r, err = v.Place(ctx(t), exchange.Order{ClientOrderID: "hxclose2", Symbol: "BTCUSDT", Action: "close", OrderType: "market", Quantity: d("1")})
	require.NoError(t, err)
	require.Equal(t, exchange.StatusRejected, r.Status)
	require.Equal(t, okx.ReasonNoPosition, r.Reason)
	require.Len(t, fake.Orders(), 1)
}

// OKX keeps a clOrdId unique only among pending orders: once the first
// order filled, the same ID places a second order. Only a lookup first
// (what the gateway does on a retry) adopts the first.
func TestFilledClientOrderIDIsAcceptedAgainSoLookupFirst(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSpot)
	o := order("hxreuse1", "BTCUSDT", "buy", "0.001")
	_, err := v.Place(ctx(t), o)
	require.NoError(t, err)

	r, adopted, err := exchange.PlaceOrAdopt(ctx(t), v, o, true)
	require.NoError(t, err)
	require.True(t, adopted)
	require.Equal(t, exchange.StatusFilled, r.Status)
	require.Len(t, fake.Orders(), 1, "the lookup adopted the filled order")

	_, err = v.Place(ctx(t), o)
	require.NoError(t, err)
	require.Len(t, fake.Orders(), 2, "the fake, like OKX, books a second order under a filled order's clOrdId")
}

// An order that reaches the engine after its expTime is refused and never
// booked: after AcceptWindow a missing order is proof, which is what
// RefusesLateRequests promises.
func TestOrderLateInEngineIsRefusedAfterExpTime(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSpot)
	require.True(t, exchange.RefusesLate(v))
	for _, tc := range []struct {
		id     string
		delay  time.Duration
		booked bool
	}{{"hxlate1", time.Second, true}, {"hxlate2", 6 * time.Second, false}} {
		fake.Inject(okxfake.Fault{Kind: okxfake.FaultLateInEngine, Delay: tc.delay})
		o := order(tc.id, "BTCUSDT", "buy", "0.001")
		_, err := v.Place(ctx(t), o)
		require.ErrorIs(t, err, exchange.ErrUnknownOutcome, "50004: the outcome is unknown")
		_, err = v.Lookup(ctx(t), o)
		require.ErrorIs(t, err, exchange.ErrNotFound, "not in the engine yet")
		fake.Advance(v.AcceptWindow())
		r, err := v.Lookup(ctx(t), o)
		if tc.booked {
			require.NoError(t, err, "processed within expTime: booked")
			require.Equal(t, exchange.StatusFilled, r.Status)
			continue
		}
		require.ErrorIs(t, err, exchange.ErrNotFound, "processed after expTime: refused")
		require.Equal(t, 1, fake.LateRefused())
	}
}

// A skewed host clock is corrected by the server-time offset; a wrong key
// or passphrase is a credentials error that placed nothing.
func TestTimestampAndCredentials(t *testing.T) {
	t.Parallel()
	fake := okxfake.New(t, okxfake.Options{})
	skewed := func() time.Time { return fake.Now().Add(-time.Minute) }
	v, err := okx.New(okx.Config{APIKey: fake.APIKey(), APISecret: fake.APISecret(), Passphrase: fake.Passphrase(),
		BaseURL: fake.URL, Now: skewed, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	r, err := v.Place(ctx(t), order("hxskew1", "BTCUSDT", "buy", "0.001"))
	require.NoError(t, err, "a minute of skew is corrected")
	require.Equal(t, exchange.StatusFilled, r.Status)

	wrong, err := okx.New(okx.Config{APIKey: fake.APIKey(), APISecret: fake.APISecret(), Passphrase: "not-it",
		BaseURL: fake.URL, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	_, err = wrong.Place(ctx(t), order("hxskew2", "BTCUSDT", "buy", "0.001"))
	require.ErrorIs(t, err, exchange.ErrCredentials)
	require.ErrorIs(t, err, exchange.ErrUnreachable)
	require.ErrorContains(t, err, "50105")
	require.Len(t, fake.Orders(), 1)
}

// A code OKX may add, answered to a placement, proves nothing: unknown,
// reconciled, never recorded as refused.
func TestUnlistedCodeIsUnknown(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSpot)
	fake.Inject(okxfake.Fault{Kind: okxfake.FaultRefuse, Code: 59999, Msg: "something new"})
	_, err := v.Place(ctx(t), order("hxnew1", "BTCUSDT", "buy", "0.001"))
	require.ErrorIs(t, err, exchange.ErrUnknownOutcome)

	fake.Inject(okxfake.Fault{Kind: okxfake.FaultRefuse, Code: 51121, Msg: "Order quantity must be a multiple of the lot size."})
	r, err := v.Place(ctx(t), order("hxnew2", "BTCUSDT", "buy", "0.001"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusRejected, r.Status)
	require.Contains(t, r.Reason, "lot size")
	require.Empty(t, fake.Orders())
}

// A spot fill reports the fee OKX charged (its negative fee flipped) in
// feeCcy, and SpotSymbol names the instrument and base currency; swaps
// are not spot.
func TestSpotFillReportsItsFee(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSpot)
	fake.SetSpotFeeRate(d("0.001"))
	r, err := v.Place(ctx(t), order("hxokxfee", "BTCUSDT", "buy", "0.01"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status)
	require.Equal(t, "BTC", r.FeeAsset)
	require.Equal(t, "0.00001", r.Fee.String())
	require.True(t, r.AvgPrice.Valid)

	symbol, base, spot, err := v.SpotSymbol(ctx(t), "BTCUSDT")
	require.NoError(t, err)
	require.Equal(t, []any{"BTC-USDT", "BTC", true}, []any{symbol, base, spot})
	swap, _ := setup(t, okx.MarketSwap)
	_, _, spot, err = swap.SpotSymbol(ctx(t), "BTCUSDT")
	require.NoError(t, err)
	require.False(t, spot)
}
