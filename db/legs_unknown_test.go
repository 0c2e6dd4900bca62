package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// Legs failed with their order unknown are listed for the sweeper to ask
// about again, least recently asked first, each at most once per period
// (MarkAsked refreshes settled_at), and bounded; open and otherwise
// settled legs are not. A settle records only what the pass read under the
// lock: a pass that read a leg open cannot settle it once it is failed,
// and one that read it failed (the sweeper's) can.
func TestUnknownLegsAreListedLeastRecentlyAskedFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	seed := func(id string, seq int, outcome string, settledAgo time.Duration) {
		t.Helper()
		_, err := pool.Exec(ctx, `INSERT INTO order_legs (client_order_id, parent_client_order_id, seq, role, trace_id, lock_key,
			exchange, mode, order_spec, sent_at, attempts, outcome, settled_at)
			VALUES ($1, 'hx-unk-0', $2, 'stop_loss', 'k:unk', 'k:unk', 'paper', 'live', '{"ClientOrderID": "x"}',
			        now() - interval '1 hour', 1, NULLIF($3, ''), CASE WHEN $3 = '' THEN NULL ELSE now() - $4::bigint * interval '1 millisecond' END)`,
			id, seq, outcome, settledAgo.Milliseconds())
		require.NoError(t, err)
	}
	seed("hx-unk-new", 1, "failed", 10*time.Second)
	seed("hx-unk-old", 2, "failed", 3*time.Hour)
	seed("hx-unk-mid", 3, "failed", 2*time.Hour)
	seed("hx-unk-older", 4, "failed", 4*time.Hour)
	seed("hx-unk-open", 5, "", 0)
	seed("hx-unk-gone", 6, "not_placed", 5*time.Hour)
	ids := func(legs []db.Leg) []string {
		var out []string
		for _, l := range legs {
			out = append(out, l.ClientOrderID)
		}
		return out
	}

	legs, err := db.ListUnknownLegs(ctx, pool, time.Minute, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"hx-unk-older", "hx-unk-old", "hx-unk-mid"}, ids(legs), "asked at most once a minute, oldest first")
	require.Equal(t, db.IntentFailed, legs[0].Outcome)
	require.Equal(t, "k:unk", legs[0].LockKey)
	require.Equal(t, "hx-unk-0", legs[0].ParentClientOrderID)
	require.Greater(t, legs[0].SentAgo, 59*time.Minute)
	legs, err = db.ListUnknownLegs(ctx, pool, time.Minute, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"hx-unk-older", "hx-unk-old"}, ids(legs), "bounded")

	// Asked, nothing learned: last in line, not listed within the period.
	tx, _, err := db.LockLegs(ctx, pool, "k:unk", "hx-unk-0", time.Second, time.Minute)
	require.NoError(t, err)
	require.NoError(t, tx.MarkAsked(ctx, legs[0]))
	legs, err = db.ListUnknownLegs(ctx, pool, time.Minute, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"hx-unk-old", "hx-unk-mid"}, ids(legs))

	// A pass that read the leg open does not settle it failed-since; the
	// sweeper, which read it failed, does.
	tx, _, err = db.LockLegs(ctx, pool, "k:unk", "hx-unk-0", time.Second, time.Minute)
	require.NoError(t, err)
	asOpen := legs[0]
	asOpen.Outcome = ""
	require.NoError(t, tx.Settle(ctx, asOpen, nil, db.IntentNotPlaced, nil))
	require.Equal(t, "failed", apptest.Text(t, pool, `SELECT outcome FROM order_legs WHERE client_order_id = 'hx-unk-old'`))
	tx, _, err = db.LockLegs(ctx, pool, "k:unk", "hx-unk-0", time.Second, time.Minute)
	require.NoError(t, err)
	require.NoError(t, tx.Settle(ctx, legs[0], nil, db.IntentNotPlaced, nil))
	require.Equal(t, "not_placed", apptest.Text(t, pool, `SELECT outcome FROM order_legs WHERE client_order_id = 'hx-unk-old'`))
	legs, err = db.ListUnknownLegs(ctx, pool, time.Minute, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"hx-unk-mid"}, ids(legs))
}
