package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/jobs"
)

// A forced release of one window-mode execution whose order is unknown (a
// missed trade, README "A missed trade") decides nothing for the signal's
// later executions. Every execution of a window signal shares its lock
// key, so the released execution's failed intent stays under the key the
// later ones claim: it is this execution's own earlier attempt only while
// the dedup window lasts (db.ClaimResult.Unknown). Past it, a later
// execution is a new order the strategy asked for: it is neither refused
// for ever at a venue that may fill late (that intent is the sweeper's to
// ask about) nor answered with the released execution's order.
func TestForcedReleaseOfOneWindowExecutionDoesNotDecideTheNextOnes(t *testing.T) {
	t.Parallel()
	const window = 300 * time.Millisecond
	const body = `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1"}`

	t.Run("AbsentAtAVenueThatMayFillLate", func(t *testing.T) {
		t.Parallel()
		venue := &memVenue{dropNext: true} // the request never reached the venue; hoox cannot know
		b := setupMemWith(t, pgtest.NewDatabase(t), venue, memOpts{window: window})
		forceReleasedUnknown(t, b, body)
		require.Zero(t, venue.count())

		// A later alert of the same content, past the dedup window: a new
		// execution, a new order the strategy asks for.
		time.Sleep(window + 100*time.Millisecond)
		out, err := b.svc.Execute(context.Background(), input(t, body))
		require.NoError(t, err, "a new window execution must not be refused because an earlier, released execution is unknown")
		require.Equal(t, db.TraceDispatched, out.Status)
		require.Equal(t, 1, venue.count())
	})

	t.Run("HeldIsNotTakenAsTheNextExecutionsOrder", func(t *testing.T) {
		t.Parallel()
		venue := &memVenue{loseNext: true} // the venue took it; the answer was lost
		b := setupMemWith(t, pgtest.NewDatabase(t), venue, memOpts{window: window})
		cid := forceReleasedUnknown(t, b, body)
		require.Equal(t, 1, venue.count())

		time.Sleep(window + 100*time.Millisecond)
		out, err := b.svc.Execute(context.Background(), input(t, body))
		require.NoError(t, err)
		require.NotEqual(t, cid, out.Order.ClientOrderID,
			"the new execution was answered with the released execution's order and placed none of its own")
		require.Equal(t, 2, venue.count(), "one order per execution")
	})
}

// A forced release frees the key, never the order: the sweeper keeps
// asking the venue about a released trace's unknown order (nobody else
// may: no later window execution does, and a client key's resend may
// never come). Found, the order is recorded under the released trace,
// created again from its intent — a client key's resend is then answered
// with it; proven absent, the intent settles not_placed; at a venue that
// may fill late, "not found" leaves it unknown and asked again.
func TestSweeperAsksAboutAForceReleasedUnknownOrder(t *testing.T) {
	t.Parallel()
	sweep := func(t *testing.T, b *memBundle) {
		t.Helper()
		time.Sleep(5 * time.Millisecond) // past the sweep's grace since the last ask
		reg := exchange.NewRegistry(map[string]exchange.Venue{"mem": b.venue})
		_, err := jobs.NewSweepWorker(b.pool, jobs.Config{SweepGrace: time.Millisecond}, reg, nil, nil).Sweep(context.Background())
		require.NoError(t, err)
	}
	outcome := func(t *testing.T, b *memBundle, cid string) (outcome db.IntentOutcome, traceID string) {
		t.Helper()
		require.NoError(t, b.pool.QueryRow(context.Background(),
			"SELECT outcome, trace_id FROM dispatch_intents WHERE client_order_id = $1", cid).Scan(&outcome, &traceID))
		return outcome, traceID
	}

	for name, body := range map[string]string{
		"Window":    `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1"}`,
		"ClientKey": `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"forced-swept"}`,
	} {
		t.Run("HeldIsRecorded"+name, func(t *testing.T) {
			t.Parallel()
			b := setupMemWith(t, pgtest.NewDatabase(t), &memVenue{loseNext: true}, memOpts{window: time.Minute})
			cid := forceReleasedUnknown(t, b, body)
			sweep(t, b)

			got, traceID := outcome(t, b, cid)
			require.Equal(t, db.IntentDispatched, got, "the released execution's order is recorded")
			require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM orders WHERE client_order_id = '"+cid+"' AND trace_id = '"+traceID+"'"))
			require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM trace_ids WHERE trace_id = '"+traceID+"' AND status = 'dispatched'"))
			if name == "ClientKey" {
				_, err := b.svc.Execute(context.Background(), input(t, body))
				ge := requireCode(t, err, codes.Duplicate)
				require.Equal(t, cid, *ge.Original.ClientOrderID, "the resend learns of the order found")
			}
			require.Equal(t, 1, b.venue.count())
		})
	}
	t.Run("AbsentAtALateRefusingVenueIsNotPlaced", func(t *testing.T) {
		t.Parallel()
		b := setupMemWith(t, pgtest.NewDatabase(t), &memVenue{dropNext: true, refusesLate: true}, memOpts{window: time.Minute})
		cid := forceReleasedUnknown(t, b, `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1"}`)
		sweep(t, b)
		got, _ := outcome(t, b, cid)
		require.Equal(t, db.IntentNotPlaced, got)
		require.Zero(t, count(t, b.pool, "SELECT count(*) FROM trace_ids"), "nothing to record: the key stays free")
	})
	t.Run("AbsentAtAVenueThatMayFillLateStaysUnknown", func(t *testing.T) {
		t.Parallel()
		b := setupMemWith(t, pgtest.NewDatabase(t), &memVenue{dropNext: true}, memOpts{window: time.Minute})
		cid := forceReleasedUnknown(t, b, `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1"}`)
		var before time.Time
		require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT settled_at FROM dispatch_intents WHERE client_order_id = $1", cid).Scan(&before))
		sweep(t, b)
		got, _ := outcome(t, b, cid)
		require.Equal(t, db.IntentFailed, got)
		var after time.Time
		require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT settled_at FROM dispatch_intents WHERE client_order_id = $1", cid).Scan(&after))
		require.True(t, after.After(before), "asked again, and marked asked")
		require.Zero(t, count(t, b.pool, "SELECT count(*) FROM trace_ids"))
	})
}
