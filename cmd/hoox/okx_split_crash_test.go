package main

import (
	"net/http"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/okx/okxfake"
	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// An okx-swap split close, hoox killed with -9 right after OKX booked the
// second part (the first leg) and before it was recorded; nobody resends
// (the primary was committed: a resend is a duplicate). BTC-USDT-SWAP
// takes market orders of at most 100 contracts (maxMktSz) and the account
// is long 250: three reduce-only parts of 100, 100 and 50 contracts. The
// next process's sweeper looks the leg up by its clOrdId and adopts it
// (OKX takes a filled order's clOrdId again, so a blind re-send would sell
// twice), then places the last part. OKX holds one order per part, the
// position is flat, all three are recorded.
func TestOKXSplitCloseCrashAfterALegIsFinishedByTheSweeper(t *testing.T) {
	t.Parallel()
	d := decimal.RequireFromString
	fake := okxfake.New(t, okxfake.Options{})
	fake.SetSymbol(okxfake.Instrument{InstType: okxfake.InstSwap, InstID: "BTC-USDT-SWAP", SettleCcy: "USDT", CtVal: d("0.01"),
		TickSz: d("0.1"), LotSz: d("0.01"), MinSz: d("0.01"), MaxMktSz: d("100")})
	fake.SetPosition("BTC-USDT-SWAP", d("250"))
	env := []string{"HOOX_OKX_SWAP_API_KEY=" + fake.APIKey(), "HOOX_OKX_SWAP_API_SECRET=" + fake.APISecret(),
		"HOOX_OKX_SWAP_API_PASSPHRASE=" + fake.Passphrase(), "HOOX_OKX_SWAP_BASE_URL=" + fake.URL}
	body := `{"secret":"` + apptest.Secret + `","exchange":"okx-swap","symbol":"BTCUSDT","action":"close","quantity":"1","trace_id":"okx-split-crash"}`
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)
	requireOnePerPart := func() {
		t.Helper()
		orders := fake.Orders()
		require.Len(t, orders, 3, "one order per part")
		ids := map[string]bool{}
		for _, o := range orders {
			require.False(t, ids[o.ClOrdID], "%s placed once", o.ClOrdID)
			ids[o.ClOrdID] = true
			require.True(t, o.ReduceOnly)
			require.True(t, o.Sz.LessThanOrEqual(d("100")), "%s contracts", o.Sz)
		}
		require.True(t, fake.Position("BTC-USDT-SWAP").IsZero(), "flat: %s left", fake.Position("BTC-USDT-SWAP"))
	}

	killedMidSignal(t, dbURL, env, "HOOX_DRILL_CRASH_AFTER_LEG", body)
	require.Len(t, fake.Orders(), 2, "the primary and the first leg are booked")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:okx-split-crash'"), "only the primary is recorded")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM order_legs WHERE outcome IS NULL AND sent_at IS NOT NULL"), "the leg's intent says it may exist")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM order_legs WHERE outcome IS NULL AND sent_at IS NULL"), "the last part is planned")

	survivor := sweeperFinishesLegs(t, dbURL, env, "k:okx-split-crash", 2, "the sweeper finished the legs")
	requireOnePerPart()
	require.Equal(t, 3, apptest.Count(t, pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:okx-split-crash'"))
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:okx-split-crash' AND event = 'leg_placed' AND detail->>'adopted' = 'true'"))

	again := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	require.Len(t, fake.Orders(), 3, "nothing placed twice")
}
