package db

import (
	"context"
	"fmt"
)

// State is what an operator alerts on that lives in Postgres rather than in
// one replica's counters: every replica reads the same values, so alert on
// their max, not their sum.
type State struct {
	// KillSwitchEngaged: trading is halted.
	KillSwitchEngaged bool
	// ReconcilingTraces counts traces whose venue answer was lost and is not
	// yet resolved; OldestReconcilingSeconds is how long the oldest has been
	// untouched (0 when none).
	ReconcilingTraces        int64
	OldestReconcilingSeconds float64
	// UnsettledIntents counts attempts whose outcome is not recorded (an
	// order may exist at the venue that hoox has not recorded);
	// OldestUnsettledSeconds is the age of the oldest (0 when none).
	UnsettledIntents       int64
	OldestUnsettledSeconds float64
	// PurgeOverdueSeconds is how long the oldest purgeable trace has been
	// past its expiry (0 when none): far past HOOX_PURGE_INTERVAL means the
	// purge is falling behind or not running. Traces the purge keeps on
	// purpose, those whose order may exist at the venue (OrderUnknownSQL),
	// do not count: the gauge would read their age until the sweeper
	// settles them, and an alert on it would fire for a trace kept by
	// design.
	PurgeOverdueSeconds float64
}

// Every age is measured on the database's clock. Each part reads an index:
// the reconciling traces trace_ids_reconciling_idx (reconciling_since is
// updated_at while a trace is reconciling, null otherwise: migration
// 00030), the unsettled intents dispatch_intents_open_idx (but an intent
// the sweeper left open for the signal's resend, asked_at set: its venue
// answered, and it may stay open for ever; jobs.leftForTheResend), the purge
// trace_ids_expires_at_idx. A scrape never scans trace_ids.
const stateSQL = `
SELECT coalesce((SELECT (value->>'engaged')::boolean FROM settings WHERE key = $1), false),
       r.n, coalesce(extract(epoch FROM now() - r.oldest), 0)::float8,
       i.n, coalesce(extract(epoch FROM now() - i.oldest), 0)::float8,
       coalesce((SELECT extract(epoch FROM now() - min(t.expires_at)) FROM trace_ids t
                 WHERE t.expires_at < now() AND NOT ` + OrderUnknownSQL + `), 0)::float8
FROM (SELECT count(*) AS n, min(reconciling_since) AS oldest FROM trace_ids WHERE reconciling_since IS NOT NULL) r,
     (SELECT count(*) AS n, min(sent_at) AS oldest FROM dispatch_intents WHERE outcome IS NULL AND asked_at IS NULL) i`

// ReadState reads State in one round trip.
func ReadState(ctx context.Context, q DBTX) (State, error) {
	var s State
	err := q.QueryRow(ctx, stateSQL, SettingKillSwitch).Scan(&s.KillSwitchEngaged,
		&s.ReconcilingTraces, &s.OldestReconcilingSeconds, &s.UnsettledIntents, &s.OldestUnsettledSeconds,
		&s.PurgeOverdueSeconds)
	if err != nil {
		return State{}, fmt.Errorf("read state: %w", translate(err))
	}
	return s, nil
}

// Replication is how the server hoox writes to replicates its commits.
type Replication struct {
	// Standbys counts the WAL senders streaming to standbys (rows of
	// pg_stat_replication; visible without privileges).
	Standbys int64
	// SyncStandbyNames is synchronous_standby_names: empty means every
	// standby is asynchronous, so a failover to one can lose commits hoox
	// already acknowledged.
	SyncStandbyNames string
}

// Async reports whether commits reach standbys asynchronously: standbys
// stream from this server and none is synchronous.
func (r Replication) Async() bool { return r.Standbys > 0 && r.SyncStandbyNames == "" }

const replicationSQL = `
SELECT (SELECT count(*) FROM pg_stat_replication), current_setting('synchronous_standby_names')`

// ReadReplication reads Replication in one round trip.
func ReadReplication(ctx context.Context, q DBTX) (Replication, error) {
	var r Replication
	if err := q.QueryRow(ctx, replicationSQL).Scan(&r.Standbys, &r.SyncStandbyNames); err != nil {
		return Replication{}, fmt.Errorf("read replication: %w", translate(err))
	}
	return r, nil
}
