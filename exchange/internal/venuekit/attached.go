package venuekit

import (
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
)

// AttachedPrices returns o's take-profit and stop-loss trigger prices as
// an adapter sends them on the order: rounded to the tick toward the
// entry (exchange.Attached.Resolve), so a stop never risks more than
// asked. A percent target must have been resolved before (the gateway
// does it once, before the intent); one that was not is refused (reason)
// rather than guessed. Invalid prices mean none.
func AttachedPrices(o exchange.Order, side string, tick decimal.Decimal) (tp, sl decimal.NullDecimal, reason string) {
	for _, a := range []struct {
		role string
		in   *exchange.Attached
		out  *decimal.NullDecimal
	}{{exchange.RoleTakeProfit, o.TakeProfit, &tp}, {exchange.RoleStopLoss, o.StopLoss, &sl}} {
		if a.in == nil {
			continue
		}
		if !a.in.Price.Valid {
			return tp, sl, fmt.Sprintf("%s: the percent target was not resolved to a price", a.role)
		}
		r, err := a.in.Resolve(a.role, side, decimal.Zero, tick)
		if err != nil {
			return tp, sl, err.Error()
		}
		*a.out = r.Price
	}
	return tp, sl, ""
}
