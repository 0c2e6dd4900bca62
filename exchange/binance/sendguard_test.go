package binance_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
)

// errHalted stands for the gateway's kill switch in the send guard.
var errHalted = errors.New("halted")

// guard is a send guard that counts its calls and answers the i-th
// (from 1) with answers[i-1], nil past the end.
type guard struct {
	calls   int
	answers []error
}

func (g *guard) check(context.Context) error {
	g.calls++
	if g.calls <= len(g.answers) {
		return g.answers[g.calls-1]
	}
	return nil
}

func halted() error { return fmt.Errorf("%w: %w", errHalted, exchange.ErrUnreachable) }

// The send guard runs right before the order's request only when Place
// read the venue first (a cold adapter syncs the clock and reads the
// filters): an order whose request is the first one Place sends (clock and
// filters cached, a spot limit order) pays no guard.
func TestSendGuardRunsOnlyWhenPlaceReadTheVenueFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketSpot)
	g := &guard{}
	r, err := b.venue.Place(exchange.WithSendGuard(ctx, g.check), limitOrder("buy", "0.01", "60000"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)
	require.Equal(t, 1, g.calls, "the clock and filters were read first")

	r, err = b.venue.Place(exchange.WithSendGuard(ctx, g.check), limitOrder("buy", "0.01", "60000"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)
	require.Equal(t, 1, g.calls, "the order was Place's first request: no guard read")
}

// Every kind of order Binance's Place sends checks the guard after its
// reads: a USDⓈ-M order (the position is read every time), a USDⓈ-M
// algo exit, a spot OCO list and a spot lone exit. Stopped, nothing is
// booked and the error is "nothing sent".
func TestSendGuardStopsEveryKindOfBinanceOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	algo := exchange.Order{ClientOrderID: newID(), Symbol: "BTCUSDT", Action: "close", Side: "sell", ReduceOnly: true,
		OrderType: "market", Quantity: d("0.01"), Exit: exchange.RoleStopLoss,
		StopLoss: &exchange.Attached{Price: decimal.NewNullDecimal(d("49000"))}}
	for _, c := range []struct {
		name   string
		market binance.Market
		o      exchange.Order
	}{
		{"futures order", binance.MarketFutures, marketOrder("buy", "0.01")},
		{"futures algo exit", binance.MarketFutures, algo},
		{"spot oco", binance.MarketSpot, ocoExit(newID())},
		{"spot lone exit", binance.MarketSpot, loneExit(newID(), exchange.RoleStopLoss, price("2700"))},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, c.market)
			b.fake.SetPosition("BTCUSDT", d("0.01"))
			b.fake.SetBalance("ETH", d("1"))
			g := &guard{answers: []error{halted()}}
			_, err := b.venue.Place(exchange.WithSendGuard(ctx, g.check), c.o)
			require.ErrorIs(t, err, errHalted)
			require.ErrorIs(t, err, exchange.ErrUnreachable)
			require.NotErrorIs(t, err, exchange.ErrUnknownOutcome)
			require.Equal(t, 1, g.calls)
			require.Empty(t, b.fake.Orders())
			require.Empty(t, b.fake.AlgoOrders())
			require.Empty(t, b.fake.OrderLists())
		})
	}
}

// A whole-position close refused -2022 behind a resting take-profit
// cancels it and is sent again — but not when the guard forbids the
// close by then: the take-profit is left protecting the position, and
// nothing is sent.
func TestFuturesCloseBehindATakeProfitCancelsNothingWhenTheGuardForbidsIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketFutures)
	b.fake.SetPosition("BTCUSDT", d("0.5"))
	tp := limitOrder("sell", "0.5", "70000")
	tp.ReduceOnly = true
	r, err := b.venue.Place(ctx, tp)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)
	b.fake.Inject(binancefake.Fault{Kind: binancefake.FaultRefuse, Count: 1, Code: -2022, Msg: "ReduceOnly Order is rejected."})

	// The first read lets the close go; the switch is engaged by the time
	// Binance refuses it.
	g := &guard{answers: []error{nil, halted()}}
	_, err = b.venue.Place(exchange.WithSendGuard(ctx, g.check), closeOrder("close"))
	require.ErrorIs(t, err, errHalted)
	require.ErrorIs(t, err, exchange.ErrUnreachable)
	require.Equal(t, 2, g.calls)
	require.Zero(t, b.fake.Cancels(), "the take-profit still protects the position")
	require.Equal(t, "0.5", b.fake.Position("BTCUSDT").String())
}

// A whole-position close refused -2022 behind a resting take-profit: the
// guard lets the close go (its first send) and lets the cancel go, then
// the kill switch is engaged while the take-profit is being cancelled.
// The guard's check before the cancel decides for the whole close: the
// re-send goes out without the guard, or Place would answer "nothing
// sent" (ErrUnreachable) with the take-profit gone — the position left
// unprotected and the caller (PlaceOrAdopt drops the Report and its
// CancelledFirst) recording no cancellation. Either the resting orders
// still protect the position, or the close they were cancelled for is
// sent.
func TestFuturesCloseBehindATakeProfitIsSentWhenTheGuardTripsDuringTheCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketFutures)
	b.fake.SetPosition("BTCUSDT", d("0.5"))
	tp := limitOrder("sell", "0.5", "70000")
	tp.ReduceOnly = true
	r, err := b.venue.Place(ctx, tp)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)
	b.fake.Inject(binancefake.Fault{Kind: binancefake.FaultRefuse, Count: 1, Code: -2022, Msg: "ReduceOnly Order is rejected."})

	// 1: the close's first send; 2: before cancelling the take-profit;
	// 3: the close's re-send, after the cancel (switch engaged meanwhile).
	g := &guard{answers: []error{nil, nil, halted()}}
	_, _, err = exchange.PlaceOrAdopt(exchange.WithSendGuard(ctx, g.check), b.venue, closeOrder("close"), false)
	t.Logf("guard calls %d, cancels %d, position %s, err %v", g.calls, b.fake.Cancels(), b.fake.Position("BTCUSDT"), err)
	if b.fake.Cancels() > 0 {
		require.True(t, b.fake.Position("BTCUSDT").IsZero(),
			"the take-profit was cancelled but the close it was cancelled for was not sent: position %s unprotected, err %v",
			b.fake.Position("BTCUSDT"), err)
	}
}
