package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/internal/pgtest"
)

// asyncByDefault turns the database's default to synchronous_commit = off
// (as a careless or "tuned" server would have it) and installs triggers
// that note, for every write to a table the protocol relies on, the
// synchronous_commit setting the writing transaction ran with. Pools
// opened afterwards inherit the default.
func asyncByDefault(t *testing.T, url string) {
	t.Helper()
	ctx := context.Background()
	admin, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	defer admin.Close()
	_, err = admin.Exec(ctx, `
DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET synchronous_commit = off', current_database()); END $$;
CREATE TABLE commit_modes (tbl text NOT NULL, op text NOT NULL, mode text NOT NULL);
CREATE FUNCTION note_commit_mode() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO commit_modes VALUES (TG_TABLE_NAME, TG_OP, current_setting('synchronous_commit'));
    RETURN NULL;
END $$;
CREATE TRIGGER note_mode AFTER INSERT OR UPDATE OR DELETE ON trace_ids FOR EACH ROW EXECUTE FUNCTION note_commit_mode();
CREATE TRIGGER note_mode AFTER INSERT OR UPDATE OR DELETE ON orders FOR EACH ROW EXECUTE FUNCTION note_commit_mode();
CREATE TRIGGER note_mode AFTER INSERT OR UPDATE OR DELETE ON dispatch_intents FOR EACH ROW EXECUTE FUNCTION note_commit_mode();
CREATE TRIGGER note_mode AFTER INSERT OR UPDATE OR DELETE ON settings FOR EACH ROW EXECUTE FUNCTION note_commit_mode();`)
	require.NoError(t, err)
}

type commitMode struct{ Tbl, Op, Mode string }

func commitModes(t *testing.T, pool *pgxpool.Pool) []commitMode {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT tbl, op, mode FROM commit_modes`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[commitMode])
	require.NoError(t, err)
	return out
}

// B8: with a server whose default is synchronous_commit = off, every write
// the recovery protocol relies on — the intent before the venue call, the
// claim's record, a reconcile's resolution and re-arm, the sweeper's
// recovery, an intent settled outside its claim, a release and the kill
// switch — still commits synchronously.
func TestProtocolWritesCommitSynchronouslyWhateverTheServerDefault(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	asyncByDefault(t, url)
	venue := &memVenue{}
	b := setupMem(t, url, venue, nil)
	ctx := context.Background()
	var mode string
	require.NoError(t, b.pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&mode))
	require.Equal(t, "off", mode, "the pools run with the server's async default")

	// A placement: intent, claim, order, settlement.
	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"sync-placed"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)

	// A lost answer: the trace reconciles; the reconcile re-arms the intent
	// and resolves the trace.
	venue.loseNext = true
	out, err = b.svc.Execute(ctx, input(t, `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"2","trace_id":"sync-lost"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceReconciling, out.Status)
	var cid string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT client_order_id FROM trace_ids WHERE trace_id = 'k:sync-lost'").Scan(&cid))
	_, err = db.TouchIntent(ctx, b.pool, cid, 1)
	require.NoError(t, err)
	_, err = db.Reconcile(ctx, b.pool, "k:sync-lost", cid, time.Second, func(context.Context, db.ReconcileState) (db.Resolution, error) {
		return db.Resolution{Status: db.TraceFailed, IntentOutcome: db.IntentFailed,
			Event: db.Event{TraceID: "k:sync-lost", Event: db.EventFailed}}, nil
	})
	require.NoError(t, err)

	// A dead attempt's intent, swept.
	crashing := setupMem(t, url, venue, crashOnce())
	executeCrashing(t, crashing.svc, input(t, `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"3","trace_id":"sync-swept"}`))
	stranded, err := db.ListStranded(ctx, b.pool, 0, time.Hour, 10)
	require.NoError(t, err)
	require.Len(t, stranded, 1)
	done, err := db.Recover(ctx, b.pool, stranded[0], time.Second, time.Hour, func(context.Context, db.Stranded) (db.Recovery, error) {
		return db.Recovery{TraceStatus: db.TraceFailed, IntentOutcome: db.IntentFailed,
			Events: []db.Event{{TraceID: "k:sync-swept", Event: db.EventFailed}}}, nil
	})
	require.NoError(t, err)
	require.True(t, done)

	// An intent settled outside its claim, a release, the kill switch.
	require.NoError(t, db.SettleIntent(ctx, b.pool, cid, db.IntentFailed))
	_, err = db.ReleaseTrace(ctx, b.pool, db.ReleaseParams{TraceID: "k:sync-placed", By: "admin", LockWait: time.Second})
	require.NoError(t, err)
	_, err = db.SetKillSwitch(ctx, b.pool, true, "drill", "admin")
	require.NoError(t, err)

	modes := commitModes(t, b.pool)
	seen := map[string]bool{}
	for _, m := range modes {
		seen[m.Tbl] = true
		require.Equal(t, "on", m.Mode, "%s %s committed with synchronous_commit = %s", m.Op, m.Tbl, m.Mode)
	}
	require.Equal(t, map[string]bool{"trace_ids": true, "orders": true, "dispatch_intents": true, "settings": true}, seen)
}
