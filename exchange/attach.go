package exchange

import (
	"fmt"

	"github.com/shopspring/decimal"
)

// Roles of an exit attached to an entry, in the words the answer, the
// admin API and the audit use ("attached": [{"role": …}]).
const (
	RoleTakeProfit   = "take_profit"
	RoleStopLoss     = "stop_loss"
	RoleTrailingStop = "trailing_stop"
)

// Attached is one exit attached to an entry order: a take-profit, a
// stop-loss or a trailing stop. What the signal asked is kept (Percent, or
// a trailing Distance); Price is the trigger price to send, set from the
// signal or resolved from a reference price by [Attached.Resolve].
type Attached struct {
	// Price is the trigger price (take-profit, stop-loss); for a trailing
	// stop resolved from a percent, Distance holds the result instead.
	Price decimal.NullDecimal
	// Percent is the signal's distance from the entry's price in percent,
	// when it gave one; Price (or Distance) is invalid until resolved.
	Percent decimal.NullDecimal
	// Distance is a trailing stop's distance in price units.
	Distance decimal.NullDecimal
	// From is the reference price a percent was resolved from (the
	// signal's quoted price, the venue's last price read at sizing, or the
	// entry's fill price): kept for the audit.
	From decimal.NullDecimal `json:",omitzero"`
}

// Resolved reports whether a carries what a venue needs to send it: a
// trigger price, or a trailing distance.
func (a Attached) Resolved() bool { return a.Price.Valid || a.Distance.Valid }

// Attachments lists o's attached exits by role, in a fixed order
// (take_profit, stop_loss, trailing_stop), skipping those not given.
func (o Order) Attachments() []RoleAttached {
	var out []RoleAttached
	for _, r := range []RoleAttached{{RoleTakeProfit, o.TakeProfit}, {RoleStopLoss, o.StopLoss}, {RoleTrailingStop, o.TrailingStop}} {
		if r.Attached != nil {
			out = append(out, r)
		}
	}
	return out
}

// RoleAttached is an attached exit with its role.
type RoleAttached struct {
	Role     string
	Attached *Attached
}

// HasAttachments reports whether o carries any attached exit.
func (o Order) HasAttachments() bool {
	return o.TakeProfit != nil || o.StopLoss != nil || o.TrailingStop != nil
}

// Resolve returns a with its trigger set and rounded to the venue's tick
// for an entry on side ("buy" or "sell") whose price is ref:
//
//   - a percent take-profit or stop-loss becomes ref ± percent; a trailing
//     stop's percent becomes a distance of ref × percent;
//   - every trigger is rounded to tick toward the entry: a stop-loss never
//     risks more than asked and a take-profit never waits for more than
//     asked; a trailing distance rounds down (tighter) for the same reason.
//
// A trigger that rounds onto or across ref (a percent smaller than a
// tick) is an error: the venue would fire it at once or refuse it. ref may
// be zero when a carries a price already (only rounding applies); tick may
// be zero (no rounding).
func (a Attached) Resolve(role, side string, ref, tick decimal.Decimal) (Attached, error) {
	if side != "buy" && side != "sell" {
		return a, fmt.Errorf("%s: no side to resolve for", role)
	}
	buy := side == "buy"
	// up is true when the trigger lies above the entry: a long's
	// take-profit, a short's stop-loss.
	up := (role == RoleTakeProfit) == buy
	if a.Percent.Valid && !a.Resolved() {
		if !ref.IsPositive() {
			return a, fmt.Errorf("%s: no price to take %s%% from", role, a.Percent.Decimal)
		}
		share := ref.Mul(a.Percent.Decimal).Div(decimal.NewFromInt(100))
		a.From = decimal.NullDecimal{Decimal: ref, Valid: true}
		switch {
		case role == RoleTrailingStop:
			a.Distance = decimal.NullDecimal{Decimal: share, Valid: true}
		case up:
			a.Price = decimal.NullDecimal{Decimal: ref.Add(share), Valid: true}
		default:
			a.Price = decimal.NullDecimal{Decimal: ref.Sub(share), Valid: true}
		}
	}
	if role == RoleTrailingStop {
		if !a.Distance.Valid {
			return a, fmt.Errorf("%s: needs a distance or a percent", role)
		}
		d := roundTick(a.Distance.Decimal, tick, false)
		if !d.IsPositive() {
			return a, fmt.Errorf("%s: distance %s is less than the tick %s", role, a.Distance.Decimal, tick)
		}
		a.Distance.Decimal = d
		return a, nil
	}
	if !a.Price.Valid {
		return a, fmt.Errorf("%s: needs a price or a percent", role)
	}
	// Toward the entry: down for a trigger above it, up for one below.
	p := roundTick(a.Price.Decimal, tick, !up)
	switch {
	case !p.IsPositive():
		return a, fmt.Errorf("%s: trigger price %s rounds to %s", role, a.Price.Decimal, p)
	case ref.IsPositive() && up && !p.GreaterThan(ref):
		return a, fmt.Errorf("%s: trigger %s is not above the entry's price %s (after rounding to the tick %s)", role, p, ref, tick)
	case ref.IsPositive() && !up && !p.LessThan(ref):
		return a, fmt.Errorf("%s: trigger %s is not below the entry's price %s (after rounding to the tick %s)", role, p, ref, tick)
	}
	a.Price.Decimal = p
	return a, nil
}

// roundTick rounds d to a multiple of tick, up or down; a zero tick leaves
// d as it is.
func roundTick(d, tick decimal.Decimal, up bool) decimal.Decimal {
	if !tick.IsPositive() {
		return d
	}
	n := d.Div(tick)
	if up {
		n = n.Ceil()
	} else {
		n = n.Floor()
	}
	return n.Mul(tick)
}

// AttachmentCapable is implemented by a venue that can protect an entry
// with attached exits. A venue that does not implement it takes none: a
// signal with take_profit, stop_loss or trailing_stop is refused with 422
// before anything is claimed or sent (Binance until its separate TP/SL
// orders land: implementing this interface there is the one change that
// lifts the refusal).
type AttachmentCapable interface {
	// RefuseAttachments returns why the venue cannot take o's attached
	// exits (a trailing stop on a venue without one, spot without TP/SL),
	// or "" when it can.
	RefuseAttachments(o Order) string
}

// RefuseAttachments returns why v cannot take o's attached exits, or ""
// when o has none or v takes them.
func RefuseAttachments(v Venue, name string, o Order) string {
	if !o.HasAttachments() {
		return ""
	}
	ac, ok := v.(AttachmentCapable)
	if !ok {
		return fmt.Sprintf("take_profit, stop_loss and trailing_stop are not supported on venue %q yet; send the entry without them", name)
	}
	return ac.RefuseAttachments(o)
}

// MatchesAttached checks the take-profit and stop-loss a venue holds on an
// order against those o would be sent with (after the adapter's rounding:
// tp and sl, invalid for none). The error wraps ErrMismatch. Only paper,
// whose exits nobody can change, uses it: Bybit and OKX let the trader
// move or remove an open order's exits, so their lookups report the exits
// they hold instead of refusing the order as another signal's.
func MatchesAttached(o Order, tp, sl decimal.NullDecimal, held Report) error {
	for _, c := range []struct {
		role       string
		want, have decimal.NullDecimal
	}{{RoleTakeProfit, tp, held.TakeProfit}, {RoleStopLoss, sl, held.StopLoss}} {
		if c.want.Valid != c.have.Valid || c.want.Valid && !c.want.Decimal.Equal(c.have.Decimal) {
			return fmt.Errorf("%w: client order id %s is held with %s %s, not %s", ErrMismatch, o.ClientOrderID, c.role, nullString(c.have), nullString(c.want))
		}
	}
	return nil
}

func nullString(d decimal.NullDecimal) string {
	if !d.Valid {
		return "none"
	}
	return d.Decimal.String()
}
