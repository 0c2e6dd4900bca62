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
