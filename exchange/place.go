package exchange

import (
	"context"
	"errors"
	"fmt"
)

// PlaceOrAdopt places o, or adopts the order the venue already holds under
// o.ClientOrderID. This is what makes a retry after a lost answer never place
// a second order.
//
// With lookupFirst, it looks the order up before placing: found → the held
// order is returned with adopted true; ErrNotFound → it places. Some venues
// (Binance) accept a reused client order ID once the first order has filled,
// so the lookup is the only safe check when a previous attempt may have
// reached the venue. It costs one round trip, so the gateway asks for it only
// when it has such evidence (a retry after a rollback, a reconcile).
//
// Either way, if Place answers ErrDuplicateClientOrderID (a concurrent
// attempt won the race), the order is looked up and adopted.
func PlaceOrAdopt(ctx context.Context, v Venue, o Order, lookupFirst bool) (r Report, adopted bool, err error) {
	if lookupFirst {
		r, err := v.Lookup(ctx, o)
		switch {
		case err == nil:
			return r, true, nil
		case !errors.Is(err, ErrNotFound):
			return Report{}, false, fmt.Errorf("look up order %s: %w", o.ClientOrderID, err)
		}
	}
	r, err = v.Place(ctx, o)
	if err == nil {
		return r, false, nil
	}
	if !errors.Is(err, ErrDuplicateClientOrderID) {
		return Report{}, false, fmt.Errorf("place order %s: %w", o.ClientOrderID, err)
	}
	r, err = v.Lookup(ctx, o)
	if err != nil {
		if errors.Is(err, ErrMismatch) {
			return Report{}, false, fmt.Errorf("adopt order %s: %w", o.ClientOrderID, err)
		}
		if errors.Is(err, ErrNotFound) {
			// The venue said it holds the order and then that it does not:
			// whether an order exists is unknown, so the gateway must
			// reconcile rather than place again.
			return Report{}, false, fmt.Errorf("adopt order %s: venue reported a duplicate it cannot find: %w", o.ClientOrderID, ErrUnknownOutcome)
		}
		// The venue holds the order, so "nothing was sent" (ErrUnreachable)
		// would be a lie that lets the gateway roll back as if no order
		// existed: whatever went wrong, the outcome is unknown.
		return Report{}, false, fmt.Errorf("adopt order %s: %w: %v", o.ClientOrderID, ErrUnknownOutcome, err)
	}
	return r, true, nil
}
