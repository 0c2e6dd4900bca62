package db

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// UISession is one login to the operator's web page. The row holds a hash
// of the cookie's token, never the token, so it cannot be replayed from a
// backup or a read replica.
type UISession struct {
	TokenHash []byte
	// CSRFToken is the session's anti-forgery token, echoed by every form
	// and script request that changes state.
	CSRFToken  string
	SourceIP   *string
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time
}

// NewUISession is a session to store at login.
type NewUISession struct {
	TokenHash []byte
	CSRFToken string
	// SourceIP is the client's address, kept for the operator's audit;
	// empty stores NULL.
	SourceIP string
	// Idle is how long the session lives without use.
	Idle time.Duration
}

// Expired sessions are swept at each login: the table stays as small as
// the number of operators, with no job of its own.
const createUISessionSQL = `
WITH sweep AS (DELETE FROM ui_sessions WHERE expires_at <= now())
INSERT INTO ui_sessions (token_hash, csrf_token, source_ip, expires_at)
VALUES ($1, $2, $3::inet, now() + $4 * interval '1 millisecond')
RETURNING token_hash, csrf_token, host(source_ip), created_at, last_seen_at, expires_at`

// CreateUISession stores a new session.
func CreateUISession(ctx context.Context, q DBTX, s NewUISession) (UISession, error) {
	row := q.QueryRow(ctx, createUISessionSQL, s.TokenHash, s.CSRFToken, nullText(s.SourceIP), s.Idle.Milliseconds())
	out, err := scanUISession(row)
	if err != nil {
		return UISession{}, fmt.Errorf("create ui session: %w", translate(err))
	}
	return out, nil
}

// Times come from the database clock, so replicas with skewed clocks agree
// on when a session expires.
const touchUISessionSQL = `
UPDATE ui_sessions SET last_seen_at = now(), expires_at = now() + $2 * interval '1 millisecond'
WHERE token_hash = $1 AND expires_at > now()
RETURNING token_hash, csrf_token, host(source_ip), created_at, last_seen_at, expires_at`

// TouchUISession returns a live session and pushes its expiry idle into the
// future: the operator used it. ErrNotFound means no such session, or it
// expired.
func TouchUISession(ctx context.Context, q DBTX, tokenHash []byte, idle time.Duration) (UISession, error) {
	out, err := scanUISession(q.QueryRow(ctx, touchUISessionSQL, tokenHash, idle.Milliseconds()))
	if err != nil {
		return UISession{}, fmt.Errorf("touch ui session: %w", translate(err))
	}
	return out, nil
}

const getUISessionSQL = `
SELECT token_hash, csrf_token, host(source_ip), created_at, last_seen_at, expires_at
FROM ui_sessions WHERE token_hash = $1 AND expires_at > now()`

// GetUISession returns a live session without extending it: a page left
// open and polling for updates is not an operator at work, so it does not
// keep the session alive. ErrNotFound means no such session, or it expired.
func GetUISession(ctx context.Context, q DBTX, tokenHash []byte) (UISession, error) {
	out, err := scanUISession(q.QueryRow(ctx, getUISessionSQL, tokenHash))
	if err != nil {
		return UISession{}, fmt.Errorf("get ui session: %w", translate(err))
	}
	return out, nil
}

const deleteUISessionSQL = `DELETE FROM ui_sessions WHERE token_hash = $1`

// DeleteUISession ends a session (logout). Deleting one that is already
// gone is not an error.
func DeleteUISession(ctx context.Context, q DBTX, tokenHash []byte) error {
	if _, err := q.Exec(ctx, deleteUISessionSQL, tokenHash); err != nil {
		return fmt.Errorf("delete ui session: %w", translate(err))
	}
	return nil
}

func scanUISession(row pgx.Row) (UISession, error) {
	var s UISession
	err := row.Scan(&s.TokenHash, &s.CSRFToken, &s.SourceIP, &s.CreatedAt, &s.LastSeenAt, &s.ExpiresAt)
	return s, err
}

// LoginThrottle is how the web page's login slows down guessing from one
// client address.
type LoginThrottle struct {
	// FreeTries is how many wrong tokens in a row pass without a delay.
	FreeTries int
	// Delay is the wait after the last free try; it doubles with each
	// further wrong token, up to MaxDelay.
	Delay    time.Duration
	MaxDelay time.Duration
	// Forget is how long after its last wrong token an address starts
	// afresh.
	Forget time.Duration
}

// DefaultLoginThrottle is the throttle the web page's login runs with: 3
// free tries, then 2 s doubling up to 5 minutes, forgotten after an hour.
func DefaultLoginThrottle() LoginThrottle {
	return LoginThrottle{FreeTries: 3, Delay: 2 * time.Second, MaxDelay: 5 * time.Minute, Forget: time.Hour}
}

// WithDefaults fills the zero (or negative) fields from
// DefaultLoginThrottle, and raises MaxDelay to Delay when it is below.
func (t LoginThrottle) WithDefaults() LoginThrottle {
	d := DefaultLoginThrottle()
	if t.FreeTries <= 0 {
		t.FreeTries = d.FreeTries
	}
	if t.Delay <= 0 {
		t.Delay = d.Delay
	}
	if t.MaxDelay <= 0 {
		t.MaxDelay = d.MaxDelay
	}
	if t.MaxDelay < t.Delay {
		t.MaxDelay = t.Delay
	}
	if t.Forget <= 0 {
		t.Forget = d.Forget
	}
	return t
}

// delayAfter is the wait after the n-th wrong token in a row.
func (t LoginThrottle) delayAfter(n int) time.Duration {
	if n < t.FreeTries {
		return 0
	}
	d := t.Delay
	for i := t.FreeTries; i < n && d < t.MaxDelay; i++ {
		d *= 2
	}
	return min(d, t.MaxDelay)
}

// LoginResult is what one login attempt came to.
type LoginResult struct {
	// OK is true when the token was right. A right token always gets
	// through, whatever the address's wait.
	OK bool
	// RetryAfter is how long the address must wait before its next wrong
	// token is looked at: set when this wrong token started or met a wait.
	RetryAfter time.Duration
	// Blocked is true when this wrong token came while the address was
	// waiting: it is counted and refused as "too many", not as "wrong".
	Blocked bool
	// Failures counts wrong tokens in a row from this address.
	Failures int
}

const lockLoginSQL = `
WITH sweep AS (DELETE FROM ui_login_failures WHERE last_failure_at < now() - interval '1 day' AND client_ip <> $1),
ins AS (INSERT INTO ui_login_failures (client_ip, failures, last_failure_at) VALUES ($1, 0, now())
        ON CONFLICT (client_ip) DO NOTHING)
SELECT 1`

const readLoginSQL = `
SELECT CASE WHEN last_failure_at < now() - $2 * interval '1 millisecond' THEN 0 ELSE failures END,
       coalesce(ceil(extract(epoch FROM greatest(blocked_until - now(), interval '0')) * 1000), 0)::bigint
FROM ui_login_failures WHERE client_ip = $1 FOR UPDATE`

// failLoginSQL never shortens a wait: a wrong token during one may only
// lengthen it.
const failLoginSQL = `
UPDATE ui_login_failures
SET failures = $2, last_failure_at = now(),
    blocked_until = CASE WHEN $3::bigint > 0 THEN greatest(blocked_until, now() + $3 * interval '1 millisecond')
                         ELSE blocked_until END
WHERE client_ip = $1`

// AttemptLogin runs check, the caller's constant-time comparison of the
// token, and counts a wrong token for clientIP under the throttle.
//
// The right token always gets through, before the throttle is looked at
// and without touching the database: the throttle is per address, and
// whoever shares the operator's address (a NAT, a proxy, an IPv6 /64)
// could otherwise keep the operator — and the kill switch — out with one
// wrong guess per wait. Nor does it clear the address's record, which
// would hand a guesser on that address fresh free tries each time the
// operator calls.
//
// A wrong token is counted under the address's row lock, so parallel
// guesses (or guesses through several replicas) are counted one after
// another; after the free tries each starts or lengthens a wait, and one
// that comes during a wait is counted and refused as Blocked.
func AttemptLogin(ctx context.Context, pool *pgxpool.Pool, clientIP string, t LoginThrottle, check func() bool) (LoginResult, error) {
	if check() {
		return LoginResult{OK: true}, nil
	}
	t = t.WithDefaults()
	var res LoginResult
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		res = LoginResult{}
		if _, err := tx.Exec(ctx, lockLoginSQL, clientIP); err != nil {
			return err
		}
		var waitMS int64
		if err := tx.QueryRow(ctx, readLoginSQL, clientIP, t.Forget.Milliseconds()).Scan(&res.Failures, &waitMS); err != nil {
			return err
		}
		res.Failures++
		next := t.delayAfter(res.Failures)
		res.Blocked = waitMS > 0
		res.RetryAfter = max(next, time.Duration(waitMS)*time.Millisecond)
		_, err := tx.Exec(ctx, failLoginSQL, clientIP, res.Failures, next.Milliseconds())
		return err
	})
	if err != nil {
		return LoginResult{}, fmt.Errorf("attempt login: %w", translate(err))
	}
	return res, nil
}

// MinuteCount is how many events of one kind happened in one minute.
type MinuteCount struct {
	Minute time.Time
	Event  string
	Count  int64
}

// EventSeries is a per-minute count of audit events for the operator
// page's chart. Start is the first minute of the series and End the
// current (still filling) one, both from the database clock.
type EventSeries struct {
	Start  time.Time
	End    time.Time
	Counts []MinuteCount
}

const seriesBoundsSQL = `SELECT date_trunc('minute', now()) - $1 * interval '1 minute', date_trunc('minute', now())`

// The range is on trace_events_at_idx and trace_purges_at_idx; admin: traces (kill switch changes)
// are the operators' own actions, not traffic.
const seriesCountsSQL = `
SELECT date_trunc('minute', at) AS minute, event, count(*)
FROM trace_history
WHERE at >= date_trunc('minute', now()) - $1 * interval '1 minute'
  AND trace_id NOT LIKE 'admin:%'
  AND event = ANY($2)
GROUP BY 1, 2
ORDER BY 1, 2`

// EventsPerMinute counts events of the given kinds per minute over the last
// minutes (the current minute included), for the stats chart.
func EventsPerMinute(ctx context.Context, q DBTX, minutes int, events []string) (EventSeries, error) {
	var s EventSeries
	b := &pgx.Batch{}
	b.Queue(seriesBoundsSQL, minutes-1).QueryRow(func(row pgx.Row) error {
		return row.Scan(&s.Start, &s.End)
	})
	b.Queue(seriesCountsSQL, minutes-1, events).Query(func(rows pgx.Rows) error {
		var c MinuteCount
		_, err := pgx.ForEachRow(rows, []any{&c.Minute, &c.Event, &c.Count}, func() error {
			s.Counts = append(s.Counts, c)
			return nil
		})
		return err
	})
	if err := q.SendBatch(ctx, b).Close(); err != nil {
		return EventSeries{}, fmt.Errorf("events per minute: %w", translate(err))
	}
	return s, nil
}
