package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hoox/hoox/exchange"
)

// SettingKillSwitch is the settings key of the trading halt. The claim reads
// it itself (see ClaimSQL), on every signal and without a cache, so a change
// is seen by every replica at once.
const SettingKillSwitch = "kill_switch"

// killSwitchEngagedSQL is true while trading is halted: the expression
// every statement that may lead to a placement (the claim, a reconcile's
// read and re-arm, a leg's arming) reads the switch with, in the
// statement itself.
const killSwitchEngagedSQL = `coalesce((SELECT (value->>'engaged')::boolean FROM settings WHERE key = 'kill_switch'), false)`

// KillSwitchTraceID is the audit trail's trace ID for kill switch changes;
// the admin: prefix cannot come from a signal.
const KillSwitchTraceID = "admin:kill-switch"

// KillSwitch is the trading halt as stored in settings.
type KillSwitch struct {
	Engaged bool
	Reason  string
	// At is when it was last changed; zero when it never was.
	At time.Time
	// By names who changed it.
	By string
}

const getKillSwitchSQL = `
SELECT coalesce((value->>'engaged')::boolean, false), coalesce(value->>'reason', ''), updated_at, updated_by
FROM settings WHERE key = $1`

// GetKillSwitch reads the kill switch; a switch never set is released.
func GetKillSwitch(ctx context.Context, q DBTX) (KillSwitch, error) {
	var k KillSwitch
	err := q.QueryRow(ctx, getKillSwitchSQL, SettingKillSwitch).Scan(&k.Engaged, &k.Reason, &k.At, &k.By)
	if errors.Is(err, pgx.ErrNoRows) {
		return KillSwitch{}, nil
	}
	if err != nil {
		return KillSwitch{}, fmt.Errorf("read kill switch: %w", translate(err))
	}
	return k, nil
}

// sendGuardSQL reads the kill switch alone, as the statements that arm a
// placement read it.
const sendGuardSQL = `SELECT ` + killSwitchEngagedSQL

// SendGuard is the send guard (exchange.WithSendGuard) of a placement
// whose intent or leg was armed on a reading of the kill switch (the
// intent's write, TouchIntent, MarkLegSent) that the adapter's own venue
// requests may since have made old: it reads the switch again, through q,
// right before the order's request. Engaged, the error wraps ErrKillSwitch
// and exchange.ErrUnreachable: nothing is sent, and the caller settles the
// send as one that never left. A failed read sends nothing either
// (exchange.ErrUnreachable with the database's error): the switch cannot
// be shown released.
func SendGuard(q DBTX) func(context.Context) error {
	return func(ctx context.Context) error {
		var engaged bool
		if err := q.QueryRow(ctx, sendGuardSQL).Scan(&engaged); err != nil {
			return fmt.Errorf("read the kill switch before sending: %w: %w", exchange.ErrUnreachable, translate(err))
		}
		if engaged {
			return fmt.Errorf("engaged before the order was sent: %w: %w", ErrKillSwitch, exchange.ErrUnreachable)
		}
		return nil
	}
}

// seedKillSwitchSQL creates the kill switch's row, released, where it was
// never set, in the setting's own transaction (overwritten by
// setKillSwitchSQL before it commits): the lock below then always has a
// row to wait on. Without it, a release racing the first engage found no
// row, read "released", overwrote the engage once it committed and was
// taken for a repeat: trading resumed unannounced.
const seedKillSwitchSQL = `
INSERT INTO settings (key, value, updated_at, updated_by)
VALUES ($1, jsonb_build_object('engaged', false), now(), 'hoox') ON CONFLICT (key) DO NOTHING`

// The value's shape is the contract with the claim, which reads exactly
// (value->>'engaged')::boolean.
const lockKillSwitchSQL = `
SELECT coalesce((value->>'engaged')::boolean, false) FROM settings WHERE key = $1 FOR UPDATE`

const setKillSwitchSQL = `
INSERT INTO settings (key, value, updated_at, updated_by)
VALUES ($4, jsonb_build_object('engaged', $1::boolean, 'reason', $2::text, 'at', now()), now(), $3)
ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at, updated_by = excluded.updated_by
RETURNING updated_at`

const killSwitchEventSQL = `
INSERT INTO trace_events (trace_id, event, detail)
VALUES ($1, CASE WHEN $2::boolean THEN 'kill_switch_engaged' ELSE 'kill_switch_released' END,
        jsonb_build_object('by', $3::text, 'reason', $4::text, 'was_engaged', $5::boolean))`

// SetKillSwitch engages or releases the trading halt and audits the change
// in the same transaction, so the trail never misses a flip. The row is
// locked while it changes, so two operators flipping it at once are
// recorded in the order they took effect.
//
// Each hook runs in the transaction before it commits (to queue a
// notification with the change: both commit or neither does), and only
// when the switch flips: a request that repeats its state is audited
// (was_engaged says so) but not announced again.
func SetKillSwitch(ctx context.Context, pool Beginner, engaged bool, reason, by string, hooks ...TxHook) (KillSwitch, error) {
	k := KillSwitch{Engaged: engaged, Reason: reason, By: by}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// Synchronous whatever the server's default: an operator told
		// "halted" must not see trading resume after a Postgres crash.
		if _, err := tx.Exec(ctx, SyncCommitSQL); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, seedKillSwitchSQL, SettingKillSwitch); err != nil {
			return err
		}
		var was bool
		if err := tx.QueryRow(ctx, lockKillSwitchSQL, SettingKillSwitch).Scan(&was); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, setKillSwitchSQL, engaged, reason, by, SettingKillSwitch).Scan(&k.At); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, killSwitchEventSQL, KillSwitchTraceID, engaged, by, reason, was); err != nil {
			return err
		}
		if was == engaged {
			// A repeat (a retried request, a second click) changed
			// nothing trading sees: audited, not announced again.
			return nil
		}
		return runHooks(ctx, tx, hooks)
	})
	if err != nil {
		return KillSwitch{}, fmt.Errorf("set kill switch: %w", translate(err))
	}
	return k, nil
}

// SettingDeployment is the settings key of this installation's client
// order ID namespace, {"id": <32 hex characters>}, created by migration
// 00008 and never changed.
const SettingDeployment = "deployment"

// ErrNoDeployment means the database holds no deployment value: it was not
// migrated.
var ErrNoDeployment = errors.New("no deployment value in settings: run the migrations")

// Deployment reads this installation's client order ID namespace; read it
// at start-up and pass it to whatever derives client order IDs.
func Deployment(ctx context.Context, q DBTX) (string, error) {
	var id *string
	err := q.QueryRow(ctx, `SELECT value->>'id' FROM settings WHERE key = $1`, SettingDeployment).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && (id == nil || *id == "")) {
		return "", ErrNoDeployment
	}
	if err != nil {
		return "", fmt.Errorf("read deployment: %w", translate(err))
	}
	return *id, nil
}

// PurgeRecord is the last purge's summary, written by Purge under
// SettingLastPurge as {"at": …, "traces": n, "events": m}.
type PurgeRecord struct {
	At     time.Time
	Traces int64
	Events int64
}

// The time is cast by Postgres, which reads both its own jsonb rendering of
// a timestamptz and RFC 3339.
const lastPurgeSQL = `
SELECT (value->>'at')::timestamptz, coalesce((value->>'traces')::bigint, 0), coalesce((value->>'events')::bigint, 0)
FROM settings WHERE key = $1`

// LastPurge reads the last purge's summary; nil when no purge has run.
func LastPurge(ctx context.Context, q DBTX) (*PurgeRecord, error) {
	var r PurgeRecord
	var at *time.Time
	err := q.QueryRow(ctx, lastPurgeSQL, SettingLastPurge).Scan(&at, &r.Traces, &r.Events)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read last purge: %w", translate(err))
	}
	if at != nil {
		r.At = *at
	}
	return &r, nil
}

// TxHook runs inside a transaction that records something an operator may
// be notified of, just before it commits; an error rolls the whole
// transaction back.
type TxHook func(ctx context.Context, tx pgx.Tx) error

func runHooks(ctx context.Context, tx pgx.Tx, hooks []TxHook) error {
	for _, h := range hooks {
		if h == nil {
			continue
		}
		if err := h(ctx, tx); err != nil {
			return err
		}
	}
	return nil
}
