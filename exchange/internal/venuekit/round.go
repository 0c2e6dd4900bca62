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
