package venuekit

import "github.com/shopspring/decimal"

// FloorTo rounds d (≥ 0) down to a multiple of step; a step that is not
// positive leaves d as it is. Rounding a quantity down never trades more
// than the signal asked.
func FloorTo(d, step decimal.Decimal) decimal.Decimal {
	if !step.IsPositive() {
		return d
	}
	return d.Sub(d.Mod(step))
}

// CeilTo rounds d (≥ 0) up to a multiple of step; a step that is not
// positive leaves d as it is.
func CeilTo(d, step decimal.Decimal) decimal.Decimal {
	if !step.IsPositive() {
		return d
	}
	m := d.Mod(step)
	if m.IsZero() {
		return d
	}
	return d.Sub(m).Add(step)
}

// RoundedFrom reports whether held, the quantity of an order a venue
// holds under hoox's client order ID, is asked rounded down to held's own
// last significant digit: 0 < held ≤ asked, and asked − held is less than
// that digit's unit (1.23 from 1.234; 0.99 from 0.99; 1200 from 1234).
// Every rounding down to a step that is a power of ten has that shape, as
// venues' steps are, so an adapter recognises the order it sent without
// the step it was sent under: a venue changes a symbol's step while orders
// rest (they keep their quantity), and re-rounding the signal's quantity
// under today's step would call hoox's own order another one.
func RoundedFrom(held, asked decimal.Decimal) bool {
	if !held.IsPositive() || held.GreaterThan(asked) {
		return false
	}
	ten := decimal.NewFromInt(10)
	unit := decimal.New(1, held.Exponent())
	for held.Mod(unit.Mul(ten)).IsZero() {
		unit = unit.Mul(ten)
	}
	return FloorTo(asked, unit).Equal(held)
}

// RoundPrice rounds a limit price to the tick toward the passive side: a
// buy down, a sell up, so rounding never makes an order more aggressive
// than the signal asked.
func RoundPrice(p, tick decimal.Decimal, side string) decimal.Decimal {
	if side == "sell" {
		return CeilTo(p, tick)
	}
	return FloorTo(p, tick)
}

// Dec parses a venue's decimal string; "" or garbage is zero (venues send
// "" for a field that does not apply).
func Dec(s string) decimal.Decimal {
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Zero
	}
	return d
}
