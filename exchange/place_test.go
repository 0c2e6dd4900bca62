package exchange_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
)

// fakeVenue is an in-memory venue whose answers a test scripts per call.
type fakeVenue struct {
	mu      sync.Mutex
	held    map[string]exchange.Report
	places  int
	lookups int
	// placeErr, when set, is returned by Place after it stores the order
	// (storeOnErr) or without storing it.
	placeErr   error
	storeOnErr bool
	// lookupErr, when set, is returned by every Lookup.
	lookupErr error
}

func newFakeVenue() *fakeVenue {
	return &fakeVenue{held: map[string]exchange.Report{}}
}

func (f *fakeVenue) Place(_ context.Context, o exchange.Order) (exchange.Report, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.places++
	if _, ok := f.held[o.ClientOrderID]; ok {
		return exchange.Report{}, exchange.ErrDuplicateClientOrderID
	}
	r := exchange.Report{ExchangeOrderID: "x-" + o.ClientOrderID, Side: o.Side, Status: exchange.StatusFilled}
	if f.placeErr != nil {
		if f.storeOnErr {
			f.held[o.ClientOrderID] = r
		}
		return exchange.Report{}, f.placeErr
	}
	f.held[o.ClientOrderID] = r
	return r, nil
}

func (f *fakeVenue) AcceptWindow() time.Duration { return 0 }

func (f *fakeVenue) Lookup(_ context.Context, o exchange.Order) (exchange.Report, error) {
	id := o.ClientOrderID
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups++
	if f.lookupErr != nil {
		return exchange.Report{}, f.lookupErr
	}
	r, ok := f.held[id]
	if !ok {
		return exchange.Report{}, exchange.ErrNotFound
	}
	return r, nil
}

func testOrder(id string) exchange.Order {
	return exchange.Order{
		ClientOrderID: id, Symbol: "BTCUSDT", Action: "buy", Side: "buy",
		OrderType: "market", Quantity: decimal.RequireFromString("0.5"),
	}
}

func TestPlaceOrAdopt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("PlacesWithoutLookupByDefault", func(t *testing.T) {
		t.Parallel()
		v := newFakeVenue()
		r, adopted, err := exchange.PlaceOrAdopt(ctx, v, testOrder("a"), false)
		require.NoError(t, err)
		require.False(t, adopted)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.Equal(t, 1, v.places)
		require.Zero(t, v.lookups, "the hot path must cost one round trip")
	})

	t.Run("LookupFirstPlacesWhenNotFound", func(t *testing.T) {
		t.Parallel()
		v := newFakeVenue()
		r, adopted, err := exchange.PlaceOrAdopt(ctx, v, testOrder("a"), true)
		require.NoError(t, err)
		require.False(t, adopted)
		require.Equal(t, "x-a", r.ExchangeOrderID)
		require.Equal(t, 1, v.places)
		require.Equal(t, 1, v.lookups)
	})

	t.Run("LookupFirstAdoptsWithoutPlacing", func(t *testing.T) {
		t.Parallel()
		v := newFakeVenue()
		v.held["a"] = exchange.Report{ExchangeOrderID: "x-old", Side: "buy", Status: exchange.StatusOpen}
		r, adopted, err := exchange.PlaceOrAdopt(ctx, v, testOrder("a"), true)
		require.NoError(t, err)
		require.True(t, adopted)
		require.Equal(t, "x-old", r.ExchangeOrderID)
		require.Equal(t, exchange.StatusOpen, r.Status)
		require.Zero(t, v.places, "an order the venue holds must never be placed again")
	})

	t.Run("AdoptsOnDuplicateFromPlace", func(t *testing.T) {
		t.Parallel()
		v := newFakeVenue()
		v.held["a"] = exchange.Report{ExchangeOrderID: "x-race", Side: "buy", Status: exchange.StatusFilled}
		r, adopted, err := exchange.PlaceOrAdopt(ctx, v, testOrder("a"), false)
		require.NoError(t, err)
		require.True(t, adopted)
		require.Equal(t, "x-race", r.ExchangeOrderID)
		require.Len(t, v.held, 1)
	})

	t.Run("RetryAfterLostAnswerAdopts", func(t *testing.T) {
		t.Parallel()
		v := newFakeVenue()
		v.placeErr, v.storeOnErr = exchange.ErrUnknownOutcome, true
		_, _, err := exchange.PlaceOrAdopt(ctx, v, testOrder("a"), false)
		require.ErrorIs(t, err, exchange.ErrUnknownOutcome)

		v.placeErr = nil
		r, adopted, err := exchange.PlaceOrAdopt(ctx, v, testOrder("a"), true)
		require.NoError(t, err)
		require.True(t, adopted)
		require.Equal(t, "x-a", r.ExchangeOrderID)
		require.Len(t, v.held, 1)
	})

	t.Run("UnreachablePassesThrough", func(t *testing.T) {
		t.Parallel()
		v := newFakeVenue()
		v.placeErr = exchange.ErrUnreachable
		_, _, err := exchange.PlaceOrAdopt(ctx, v, testOrder("a"), false)
		require.ErrorIs(t, err, exchange.ErrUnreachable)
		require.Empty(t, v.held)
	})

	t.Run("LookupFailureDoesNotPlace", func(t *testing.T) {
		t.Parallel()
		v := newFakeVenue()
		v.lookupErr = exchange.ErrUnreachable
		_, _, err := exchange.PlaceOrAdopt(ctx, v, testOrder("a"), true)
		require.ErrorIs(t, err, exchange.ErrUnreachable)
		require.Zero(t, v.places, "without a lookup answer, placing could duplicate the order")
	})

	t.Run("DuplicateThatCannotBeReadIsUnknownOutcome", func(t *testing.T) {
		t.Parallel()
		v := newFakeVenue()
		v.held["a"] = exchange.Report{ExchangeOrderID: "x-race"}
		v.lookupErr = exchange.ErrUnreachable
		_, _, err := exchange.PlaceOrAdopt(ctx, v, testOrder("a"), false)
		require.ErrorIs(t, err, exchange.ErrUnknownOutcome)
		require.False(t, errors.Is(err, exchange.ErrUnreachable),
			"the venue holds the order, so the gateway must not treat it as never sent")
	})

	t.Run("DuplicateThenNotFoundIsUnknownOutcome", func(t *testing.T) {
		t.Parallel()
		v := newFakeVenue()
		v.placeErr = exchange.ErrDuplicateClientOrderID
		_, _, err := exchange.PlaceOrAdopt(ctx, v, testOrder("a"), false)
		require.ErrorIs(t, err, exchange.ErrUnknownOutcome)
	})
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	paper, other := newFakeVenue(), newFakeVenue()
	in := map[string]exchange.Venue{"paper": paper, "binance": other}
	r := exchange.NewRegistry(in)
	delete(in, "binance")

	v, ok := r.Get("paper")
	require.True(t, ok)
	require.Same(t, paper, v)
	_, ok = r.Get("kraken")
	require.False(t, ok)
	require.Equal(t, []string{"binance", "paper"}, r.Names(), "the registry must not follow later edits of the caller's map")
}
