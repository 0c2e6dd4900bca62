package venuekit

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRoundPriceIsPassive(t *testing.T) {
	t.Parallel()
	tick := Dec("0.5")
	require.Equal(t, "100", RoundPrice(Dec("100.4"), tick, "buy").String())
	require.Equal(t, "100.5", RoundPrice(Dec("100.1"), tick, "sell").String())
	require.Equal(t, "100.5", RoundPrice(Dec("100.5"), tick, "sell").String())
	require.Equal(t, "100", RoundPrice(Dec("100"), Dec("0"), "sell").String(), "no tick, no rounding")
	require.Equal(t, "0.012", FloorTo(Dec("0.0129"), Dec("0.001")).String())
	require.Equal(t, "0", Dec("not a number").String())
}

func TestRoundedFromTakesOnlyTheAskRoundedDownToItsOwnLastDigit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		held, asked string
		want        bool
	}{
		{"1.23", "1.234", true},
		{"1.23000000", "1.234", true}, // as Binance writes quantities
		{"0.99", "0.99", true},
		{"1200", "1234", true},
		{"1.2", "1.234", true}, // a step of 0.1
		{"1.22", "1.234", false},
		{"1.235", "1.234", false},
		{"0", "1.234", false},
		{"1.234", "1.234", true},
	} {
		require.Equal(t, c.want, RoundedFrom(Dec(c.held), Dec(c.asked)), "%s from %s", c.held, c.asked)
	}
}
