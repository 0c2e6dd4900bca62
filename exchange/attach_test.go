package exchange

import (
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"
)

func nd(s string) decimal.NullDecimal {
	return decimal.NullDecimal{Decimal: decimal.RequireFromString(s), Valid: true}
}

func TestAttachedResolve(t *testing.T) {
	t.Parallel()

	ref, tick := decimal.RequireFromString("100.03"), decimal.RequireFromString("0.1")
	tests := []struct {
		name, role, side string
		in               Attached
		price, distance  string
	}{
		// 100.03 × 1.02 = 102.0306: a long's take-profit rounds down, toward the entry.
		{"long take-profit percent", RoleTakeProfit, "buy", Attached{Percent: nd("2")}, "102", ""},
		// 100.03 × 0.98 = 98.0294: a long's stop rounds up, toward the entry.
		{"long stop-loss percent", RoleStopLoss, "buy", Attached{Percent: nd("2")}, "98.1", ""},
		{"short take-profit percent", RoleTakeProfit, "sell", Attached{Percent: nd("2")}, "98.1", ""},
		{"short stop-loss percent", RoleStopLoss, "sell", Attached{Percent: nd("2")}, "102", ""},
		{"price off the tick", RoleStopLoss, "buy", Attached{Price: nd("95.05")}, "95.1", ""},
		// 100.03 × 1 % = 1.0003: the trailing distance rounds down.
		{"trailing percent", RoleTrailingStop, "buy", Attached{Percent: nd("1")}, "", "1"},
		{"trailing distance", RoleTrailingStop, "sell", Attached{Distance: nd("0.55")}, "", "0.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.in.Resolve(tt.role, tt.side, ref, tick)
			require.NoError(t, err)
			require.True(t, got.Resolved())
			if tt.price != "" {
				require.Equal(t, tt.price, got.Price.Decimal.String())
			}
			if tt.distance != "" {
				require.Equal(t, tt.distance, got.Distance.Decimal.String())
			}
			if tt.in.Percent.Valid {
				require.Equal(t, ref.String(), got.From.Decimal.String(), "the reference price is kept for the audit")
				require.Equal(t, tt.in.Percent, got.Percent, "what was asked is kept")
			}
			again, err := got.Resolve(tt.role, tt.side, ref, tick)
			require.NoError(t, err)
			require.Equal(t, got, again, "resolving twice changes nothing")
		})
	}
}

func TestAttachedResolveRefuses(t *testing.T) {
	t.Parallel()

	ref, tick := decimal.RequireFromString("100"), decimal.RequireFromString("1")
	_, err := Attached{Percent: nd("0.5")}.Resolve(RoleTakeProfit, "buy", ref, tick)
	require.ErrorContains(t, err, "not above the entry's price", "0.5 % of 100 is less than a tick: the take-profit would sit on the entry")
	_, err = Attached{Percent: nd("0.5")}.Resolve(RoleTakeProfit, "sell", ref, tick)
	require.ErrorContains(t, err, "not below", "a short's take-profit rounds up onto the entry")
	_, err = Attached{Percent: nd("0.5")}.Resolve(RoleTrailingStop, "buy", ref, tick)
	require.ErrorContains(t, err, "less than the tick")
	_, err = Attached{Percent: nd("2")}.Resolve(RoleTakeProfit, "buy", decimal.Zero, tick)
	require.ErrorContains(t, err, "no price to take 2% from")
	_, err = Attached{Price: nd("99")}.Resolve(RoleTakeProfit, "buy", ref, tick)
	require.ErrorContains(t, err, "not above the entry's price")
	_, err = Attached{Percent: nd("2")}.Resolve(RoleTakeProfit, "", ref, tick)
	require.ErrorContains(t, err, "no side")
}

func TestRefuseAttachmentsByDefault(t *testing.T) {
	t.Parallel()

	var v Venue // a venue that does not implement AttachmentCapable
	o := Order{Side: "buy", StopLoss: &Attached{Percent: nd("1")}}
	require.Contains(t, RefuseAttachments(v, "binance", o), `not supported on venue "binance" yet`)
	require.Empty(t, RefuseAttachments(v, "binance", Order{Side: "buy"}), "an order without attachments is never refused")
	require.Equal(t, []RoleAttached{{RoleStopLoss, o.StopLoss}}, o.Attachments())
}
