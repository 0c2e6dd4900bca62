package bybit_test

import (
	"testing"

	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/internal/venuekit/venuekittest"
)

// docs/venues/bybit.md's error table must say what the code does.
func TestDocErrorTableMatchesCode(t *testing.T) {
	t.Parallel()
	venuekittest.RequireDocTable(t, "../../docs/venues/bybit.md", bybit.ErrorTable())
}
