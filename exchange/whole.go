package exchange

import (
	"strings"

	"github.com/shopspring/decimal"
)

// WholePosition reports whether s sized a close as all of the position: a
// percent_of_position close of 100 % (or more). Such a close means "leave
// no position", as a close without a quantity does: resting reduce-only
// orders that would block it protect nothing once it fills, so a venue
// adapter may cancel them first (Binance USDⓈ-M, paper), where a smaller
// share must leave them for the part it keeps open.
func WholePosition(s *Sizing) bool {
	if s == nil || s.Type != QuantityPercentOfPosition {
		return false
	}
	asked, err := decimal.NewFromString(strings.TrimSuffix(strings.TrimSpace(s.Asked), "%"))
	return err == nil && asked.GreaterThanOrEqual(decimal.NewFromInt(100))
}
