package db_test

import (
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
)

// An exit a venue takes on a limit entry (Bybit, OKX, paper) is shown
// not_placed once the entry was cancelled or expired with nothing filled:
// there is no position and the venue never set it. Before, it read
// "placed". After a partial fill it stays placed (Bybit's Partial mode
// sets it on what filled).
func TestAttachedExitsOfAnEntryEndedWithoutAFillAreNotPlaced(t *testing.T) {
	t.Parallel()
	d := decimal.RequireFromString
	row := func(status, filled string) db.OrderRow {
		return db.OrderRow{Role: "primary", Status: status, FilledQuantity: decimal.NewNullDecimal(d(filled)),
			TakeProfit: decimal.NewNullDecimal(d("110")), StopLoss: decimal.NewNullDecimal(d("90"))}
	}
	for _, c := range []struct{ status, filled, want string }{
		{"open", "0", db.AttachedWaiting},
		{"cancelled", "0", db.AttachedNotPlaced},
		{"expired", "0", db.AttachedNotPlaced},
		{"cancelled", "0.2", db.AttachedPlaced},
		{"filled", "1", db.AttachedPlaced},
		{"rejected", "0", db.AttachedNotPlaced},
	} {
		got := row(c.status, c.filled).Attached()
		require.Len(t, got, 2)
		require.Equal(t, c.want, got[0].Status, "%s after %s filled", c.status, c.filled)
		require.Equal(t, c.want, got[1].Status)
	}
}
