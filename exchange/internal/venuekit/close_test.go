package venuekit

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
)

// Leverage is set only for an order that opens or adds to a position: an
// exit that only reduces the position it is sent against (a plain sell of
// the long) must not be refused over a leverage change the venue refuses
// because of that very position.
func TestSetsLeverageOnlyWhenTheOrderOpensSomething(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		action   string
		side     string
		qty      string
		position string
		reduce   bool
		leverage int
		want     bool
	}{
		{"entry from flat", "buy", "buy", "1", "0", false, 5, true},
		{"adds to the long", "buy", "buy", "1", "2", false, 5, true},
		{"sell of part of the long", "sell", "sell", "1", "2", false, 5, false},
		{"sell of all of the long", "sell", "sell", "2", "2", false, 5, false},
		{"sell past the long opens a short", "sell", "sell", "3", "2", false, 5, true},
		{"buy of the short", "buy", "buy", "2", "-2", false, 5, false},
		{"no leverage asked", "buy", "buy", "1", "0", false, 0, false},
		{"reduce-only", "sell", "sell", "3", "2", true, 5, false},
		{"close", "close", "", "2", "2", true, 5, false},
	} {
		o := exchange.Order{Action: c.action, Side: c.side, Quantity: Dec(c.qty), ReduceOnly: c.reduce, Leverage: c.leverage}
		require.Equal(t, c.want, SetsLeverage(o, Dec(c.position)), c.name)
	}
}
