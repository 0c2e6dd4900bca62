package app_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/apptest"
)

// Sizing on the paper venue through /webhook: quote at the signal's price,
// a share of paper's own position; percent_of_balance, which needs a
// balance paper does not keep, and every malformed sizing are 400s that
// claim nothing.
func TestPaperSizing(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t)
	body := func(members string) string {
		return fmt.Sprintf(`{"secret":%q,"exchange":"paper","symbol":"SIZEUSDT",%s}`, apptest.Secret, members)
	}

	r := apptest.Post(t, b.URL, body(`"action":"buy","quantity":"250","quantity_type":"quote","price":"50","order_type":"market","trace_id":"p-quote"`))
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.Equal(t, "5", r.Str("order", "quantity"), "250 quote at 50")

	r = apptest.Post(t, b.URL, body(`"action":"close","quantity":"50%","trace_id":"p-half"`))
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.Equal(t, "2.5", r.Str("order", "quantity"))
	require.Equal(t, "sell", r.Str("order", "side"))
	require.Equal(t, "5", apptest.Text(t, b.Pool, `SELECT detail->'sizing'->>'position' FROM trace_history WHERE trace_id = 'k:p-half' AND event = 'dispatched'`))

	r = apptest.Post(t, b.URL, body(`"sentiment":"flat","quantity":"2.5","trace_id":"p-flat"`))
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.Equal(t, "sell", r.Str("order", "side"))

	traces := apptest.Count(t, b.Pool, "SELECT count(*) FROM trace_ids")
	for _, c := range []struct{ members, field string }{
		{`"action":"buy","quantity":"10%","trace_id":"p-bad-1"`, "quantity_type"},
		{`"action":"buy","quantity":"10","quantity_type":"percent_of_balance","trace_id":"p-bad-2"`, "quantity_type"},
		{`"action":"buy","quantity":"1","quantity_type":"lots","trace_id":"p-bad-3"`, "quantity_type"},
		{`"action":"close","quantity":"101%","trace_id":"p-bad-4"`, "quantity"},
		{`"action":"close","quantity":"0%","trace_id":"p-bad-5"`, "quantity"},
		{`"action":"buy","quantity":"5","quantity_type":"percent_of_position","trace_id":"p-bad-6"`, "quantity_type"},
	} {
		r := apptest.Post(t, b.URL, body(c.members))
		require.Equal(t, http.StatusBadRequest, r.Status, r.Raw)
		require.Equal(t, "invalid_signal", r.Str("code"))
		require.Contains(t, r.Str("detail"), c.field, r.Raw)
	}
	require.Equal(t, traces, apptest.Count(t, b.Pool, "SELECT count(*) FROM trace_ids"), "nothing claimed")
}
