package venues_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/venuefake"
	"github.com/hoox/hoox/exchange/venues"
)

// venueUnderTest is one registry entry's adapter on its own fake.
type venueUnderTest struct {
	kind  venues.Kind
	fake  venuefake.Fake
	venue exchange.Venue
	price decimal.Decimal
}

func start(t *testing.T, k venues.Kind) venueUnderTest {
	t.Helper()
	fake := k.StartFake(t)
	v, err := k.New(venues.Settings{APIKey: fake.APIKey(), APISecret: fake.APISecret(), Passphrase: fake.Passphrase(),
		BaseURL: fake.URL(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	price := decimal.NewFromInt(50000)
	fake.SetPrice(k.Fake.Symbol, price)
	return venueUnderTest{kind: k, fake: fake, venue: v, price: price}
}

// order is a buy of the kind's sample symbol and quantity: a market order,
// or a limit far enough below the price to rest on the book.
func (u venueUnderTest) order(id string, limit bool) exchange.Order {
	o := exchange.Order{ClientOrderID: id, Symbol: u.kind.Fake.Symbol, Action: "buy", Side: "buy",
		OrderType: "market", Quantity: decimal.RequireFromString(u.kind.Fake.Quantity)}
	if limit {
		o.OrderType = "limit"
		o.Price = decimal.NewNullDecimal(u.price.Mul(decimal.RequireFromString("0.9")))
	}
	return o
}

// The same scenarios, through the same interfaces (exchange.Venue and
// venuefake.Fake), on every venue in the registry: what the gateway's
// exactly-once rests on must hold on each, whatever the venue's own rules.
func TestScenariosOnEveryVenue(t *testing.T) {
	t.Parallel()
	scenarios := []struct {
		name string
		run  func(t *testing.T, u venueUnderTest)
	}{
		{"PlaceBooksOneOrder", func(t *testing.T, u venueUnderTest) {
			o := u.order("hxplace0000000000000000000000001", false)
			r, err := u.venue.Place(ctx(t), o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
			require.True(t, r.FilledQuantity.Equal(o.Quantity), "filled %s of %s", r.FilledQuantity, o.Quantity)
			orders := u.fake.Orders()
			require.Len(t, orders, 1)
			require.Equal(t, o.ClientOrderID, orders[0].ClientOrderID)
			require.Equal(t, r.ExchangeOrderID, orders[0].ExchangeOrderID)
			require.Equal(t, "buy", orders[0].Side)
			require.True(t, orders[0].Quantity.Equal(o.Quantity), "booked %s, signal %s", orders[0].Quantity, o.Quantity)
		}},
		{"DuplicateIsAdopted", func(t *testing.T, u venueUnderTest) {
			// A resting limit order holds its client order ID on every
			// venue (Binance only while it is open): a second placement
			// under it is refused as a duplicate and the first adopted.
			o := u.order("hxdup000000000000000000000000001", true)
			first, err := u.venue.Place(ctx(t), o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusOpen, first.Status, first.Reason)
			again, adopted, err := exchange.PlaceOrAdopt(ctx(t), u.venue, o, false)
			require.NoError(t, err)
			require.True(t, adopted, "the second placement adopts the first order")
			require.Equal(t, first.ExchangeOrderID, again.ExchangeOrderID)
			require.Len(t, u.fake.Orders(), 1, "one order for one client order id")
		}},
		{"LostAnswerIsAdoptedNotPlacedAgain", func(t *testing.T, u venueUnderTest) {
			for _, f := range []venuefake.Fault{venuefake.ServerErrorAfterAccept, venuefake.DropAfterAccept} {
				o := u.order(fmt.Sprintf("hxlost%024d", int(f)), false)
				u.fake.Inject(f)
				_, err := u.venue.Place(ctx(t), o)
				require.ErrorIs(t, err, exchange.ErrUnknownOutcome, "%s: the order may exist", f)
				require.NotErrorIs(t, err, exchange.ErrUnreachable, "%s", f)
				r, adopted, err := exchange.PlaceOrAdopt(ctx(t), u.venue, o, true)
				require.NoError(t, err, "%s", f)
				require.True(t, adopted, "%s: the retry finds the order", f)
				require.Equal(t, exchange.StatusFilled, r.Status, "%s", f)
			}
			require.Len(t, u.fake.Orders(), 2, "one order per signal, none placed twice")
		}},
		{"LaggingLookupProvesNothingUntilItCatchesUp", func(t *testing.T, u venueUnderTest) {
			// Inside the accept window a "not found" after a lost answer
			// proves nothing: the order query may trail the placement.
			o := u.order("hxlag000000000000000000000000001", false)
			u.fake.LagNextLookup(300 * time.Millisecond)
			u.fake.Inject(venuefake.ServerErrorAfterAccept)
			_, err := u.venue.Place(ctx(t), o)
			require.ErrorIs(t, err, exchange.ErrUnknownOutcome)
			_, err = u.venue.Lookup(ctx(t), o)
			require.ErrorIs(t, err, exchange.ErrNotFound, "the query trails the order")
			require.Len(t, u.fake.Orders(), 1, "yet the venue holds it")
			require.Eventually(t, func() bool {
				r, err := u.venue.Lookup(ctx(t), o)
				return err == nil && r.ExchangeOrderID == u.fake.Orders()[0].ExchangeOrderID
			}, 5*time.Second, 20*time.Millisecond, "the lookup finds it once the lag has passed")
		}},
		{"RefusalIsFinalAndBooksNothing", func(t *testing.T, u venueUnderTest) {
			u.fake.Inject(venuefake.RefuseInsufficientBalance)
			r, err := u.venue.Place(ctx(t), u.order("hxrefuse000000000000000000000001", false))
			require.NoError(t, err, "a refusal for good is a report, not an error")
			require.Equal(t, exchange.StatusRejected, r.Status)
			require.NotEmpty(t, r.Reason, "the venue's reason reaches the signal")
			require.Empty(t, u.fake.Orders())
		}},
		{"RefusedCredentialsSendNothing", func(t *testing.T, u venueUnderTest) {
			accept := u.fake.RefuseCredentials()
			o := u.order("hxcreds0000000000000000000000001", false)
			_, err := u.venue.Place(ctx(t), o)
			require.ErrorIs(t, err, exchange.ErrUnreachable)
			require.ErrorIs(t, err, exchange.ErrCredentials)
			require.Empty(t, u.fake.Orders())
			accept()
			r, err := u.venue.Place(ctx(t), o)
			require.NoError(t, err, "the same order goes through once the key is fixed")
			require.Equal(t, exchange.StatusFilled, r.Status)
		}},
		{"RestingOrderIsFollowedAndCancelled", func(t *testing.T, u venueUnderTest) {
			// Issue 19: a resting limit order that fills in part shows what
			// executed, at what average price and for what fee; a cancel
			// ends it cancelled with that part kept, and cancelling it again
			// reports it as it is (the venue refuses the second cancel).
			o := u.order("hxfollow000000000000000000000001", true)
			placed, err := u.venue.Place(ctx(t), o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusOpen, placed.Status, placed.Reason)
			part := o.Quantity.Div(decimal.NewFromInt(2))
			require.NoError(t, u.fake.FillPart(o.ClientOrderID, part))
			r, err := u.venue.Lookup(ctx(t), o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusOpen, r.Status)
			require.True(t, r.FilledQuantity.Equal(part), "filled %s of %s", r.FilledQuantity, o.Quantity)
			require.True(t, r.AvgPrice.Valid && r.AvgPrice.Decimal.Equal(r.Price.Decimal), "average price %v at limit %v", r.AvgPrice, r.Price)
			r, err = exchange.ReadFees(ctx(t), u.venue, o, r, decimal.Zero, false)
			require.NoError(t, err)
			require.True(t, r.Fee.IsPositive(), "a fee was charged: %s", r.Fee)
			require.NotEmpty(t, r.FeeAsset)

			canceler, ok := u.venue.(exchange.Canceler)
			require.True(t, ok, "every venue can cancel")
			r, err = canceler.Cancel(ctx(t), o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusCancelled, r.Status)
			require.True(t, r.FilledQuantity.Equal(part), "what filled before is kept")
			r, err = canceler.Cancel(ctx(t), o)
			require.NoError(t, err, "a second cancel is not an error")
			require.Equal(t, exchange.StatusCancelled, r.Status)
		}},
		{"PartlyFilledThenCancelledAtTheVenueKeepsWhatFilled", func(t *testing.T, u venueUnderTest) {
			// The venue (or the account's owner in its app) ends a resting
			// order hoox did not cancel: the lookup — the follow job's —
			// reports it cancelled with what filled and its average price,
			// what an entry's exits are sized from (migration 00018).
			o := u.order("hxvenuecancel0000000000000000001", true)
			placed, err := u.venue.Place(ctx(t), o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusOpen, placed.Status, placed.Reason)
			part := o.Quantity.Div(decimal.NewFromInt(2))
			require.NoError(t, u.fake.FillPart(o.ClientOrderID, part))
			require.NoError(t, u.fake.CancelAtVenue(o.ClientOrderID))
			require.Error(t, u.fake.CancelAtVenue(o.ClientOrderID), "no longer resting")
			r, err := u.venue.Lookup(ctx(t), o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusCancelled, r.Status)
			require.True(t, r.Status.Final())
			require.True(t, r.FilledQuantity.Equal(part), "filled %s of %s", r.FilledQuantity, o.Quantity)
			require.True(t, r.AvgPrice.Valid && r.AvgPrice.Decimal.Equal(r.Price.Decimal), "average price %v at limit %v", r.AvgPrice, r.Price)
		}},
		{"SendGuardStopsTheOrderAfterPlacesOwnReads", func(t *testing.T, u venueUnderTest) {
			// A cold adapter reads the venue (its clock, the symbol's
			// rules) before the order: the caller's send guard (the kill
			// switch, engaged meanwhile) runs right before the order's
			// request and stops it, nothing booked, nothing sent.
			halted := errors.New("halted")
			calls := 0
			guard := func(context.Context) error {
				calls++
				return fmt.Errorf("%w: %w", halted, exchange.ErrUnreachable)
			}
			o := u.order("hxguard000000000000000000000001", false)
			_, err := u.venue.Place(exchange.WithSendGuard(ctx(t), guard), o)
			require.ErrorIs(t, err, halted)
			require.ErrorIs(t, err, exchange.ErrUnreachable, "nothing was sent")
			require.NotErrorIs(t, err, exchange.ErrUnknownOutcome)
			require.Equal(t, 1, calls)
			require.Empty(t, u.fake.Orders())
			r, err := u.venue.Place(exchange.WithSendGuard(ctx(t), func(context.Context) error { return nil }), o)
			require.NoError(t, err, "a guard that allows it lets the same order through")
			require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
			require.Len(t, u.fake.Orders(), 1)
		}},
		{"UnknownSymbolIsRefusedBeforeSending", func(t *testing.T, u venueUnderTest) {
			o := u.order("hxsym000000000000000000000000001", false)
			o.Symbol = "NOPEUSDT"
			r, err := u.venue.Place(ctx(t), o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusRejected, r.Status)
			require.Empty(t, u.fake.Orders())
		}},
	}
	for _, k := range venues.All() {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) {
					sc.run(t, start(t, k))
				})
			}
		})
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// Every entry is complete: a name and variables of its own, a testnet, an
// adapter that builds from a key pair, and a fake that serves it.
func TestRegistryEntriesAreComplete(t *testing.T) {
	t.Parallel()
	names, envs := map[string]bool{}, map[string]bool{}
	for _, k := range venues.All() {
		require.NotEmpty(t, k.Name)
		require.False(t, names[k.Name], "name %s twice", k.Name)
		require.False(t, envs[k.Env], "env %s twice", k.Env)
		names[k.Name], envs[k.Env] = true, true
		require.NotEqual(t, exchange.PaperName, k.Name)
		require.NotEmpty(t, k.TestnetURL, k.Name)
		got, ok := venues.Lookup(k.Name)
		require.True(t, ok)
		require.Equal(t, k.Env, got.Env)
		_, err := k.New(venues.Settings{})
		require.Error(t, err, "%s: an adapter without a key pair is refused", k.Name)
	}
	require.Equal(t, len(venues.All()), len(venues.Names()))
	_, ok := venues.Lookup("nope")
	require.False(t, ok)
}
