package okx_test

import (
	"testing"

	"github.com/hoox/hoox/exchange/internal/venuekit/venuekittest"
	"github.com/hoox/hoox/exchange/okx"
)

// docs/venues/okx.md's error table must say what the code does.
func TestDocErrorTableMatchesCode(t *testing.T) {
	t.Parallel()
	venuekittest.RequireDocTable(t, "../../docs/venues/okx.md", okx.ErrorTable())
}
