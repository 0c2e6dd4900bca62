package failover_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/app"
	"github.com/hoox/hoox/internal/localpg"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/sql/migrations"
)

func TestMain(m *testing.M) {
	pgtest.MainLeakChecked(m, func() { client.CloseIdleConnections() })
}

var client = &http.Client{Timeout: 15 * time.Second}

const secret = "failover-drill-secret"

// pair is a primary and a standby streaming from it.
type pair struct {
	binDir           string
	primary, standby *localpg.Cluster
}

// startPair starts a primary with the given synchronous_standby_names and a
// standby cloned from it with pg_basebackup, and waits until the standby
// streams (and, when sync, is the synchronous one).
func startPair(t *testing.T, syncNames string) *pair {
	t.Helper()
	// Bounded: a synchronous commit with no standby would wait forever.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	binDir, err := localpg.FindBinDir()
	if err != nil {
		t.Skipf("failover drill needs the PostgreSQL server binaries (apt-get install postgresql): %v", err)
	}
	if _, err := os.Stat(filepath.Join(binDir, "pg_basebackup")); err != nil {
		t.Skipf("failover drill needs pg_basebackup beside the server binaries (apt-get install postgresql): %v", err)
	}
	root, err := os.MkdirTemp("", "hoox-failover-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	require.NoError(t, os.Chmod(root, 0o755))
	pgUser := ""
	if os.Geteuid() == 0 {
		// As root the servers run as postgres (like internal/localpg), and
		// pg_basebackup must write the standby's directory as that user.
		u, err := user.Lookup("postgres")
		require.NoError(t, err, "running as root needs a postgres user")
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		require.NoError(t, os.Chown(root, uid, gid))
		pgUser = "postgres"
	}
	// synchronous_standby_names is set once the standby streams: before
	// that, every commit would wait for a standby that does not exist yet.
	settings := []string{"wal_level=replica", "max_wal_senders=4", "wal_sender_timeout=5s"}
	primary, err := localpg.Start(ctx, localpg.Config{DataDir: filepath.Join(root, "primary"), BinDir: binDir, Settings: settings})
	require.NoError(t, err)
	t.Cleanup(func() { _ = primary.Stop(context.Background()) })

	pconn := connect(t, primary.URL("postgres"))
	_, err = pconn.Exec(ctx, "CREATE DATABASE hoox")
	require.NoError(t, err)
	sqldb, err := migrations.Open(primary.URL("hoox"))
	require.NoError(t, err)
	require.NoError(t, migrations.Up(ctx, sqldb))
	require.NoError(t, sqldb.Close())

	standbyDir := filepath.Join(root, "standby")
	args := []string{"-D", standbyDir, "-R", "-X", "stream", "-c", "fast", "-h", primary.SocketDir(),
		"-p", strconv.Itoa(primary.Port()), "-U", "postgres", "-d", "application_name=standby1"}
	bin := filepath.Join(binDir, "pg_basebackup")
	var cmd *exec.Cmd
	if pgUser != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", pgUser, "--", bin}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, bin, args...)
	}
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "pg_basebackup: %s", out)
	// The primary keeps its socket (and its lock file) in its data dir,
	// which pg_basebackup copied; the copy's lock would stop the standby.
	locks, _ := filepath.Glob(filepath.Join(standbyDir, ".s.PGSQL.*.lock"))
	for _, l := range locks {
		require.NoError(t, os.Remove(l))
	}
	// The standby has its own socket (its own dir), same port number.
	standby, err := localpg.Start(ctx, localpg.Config{DataDir: standbyDir, BinDir: binDir,
		Settings: []string{"hot_standby=on", "wal_receiver_status_interval=1s"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = standby.Stop(context.Background()) })

	want := "async"
	if syncNames != "" {
		want = "sync"
		_, err = pconn.Exec(ctx, "ALTER SYSTEM SET synchronous_standby_names = '"+strings.ReplaceAll(syncNames, "'", "''")+"'")
		require.NoError(t, err)
		_, err = pconn.Exec(ctx, "SELECT pg_reload_conf()")
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		var state string
		err := pconn.QueryRow(ctx, "SELECT sync_state FROM pg_stat_replication LIMIT 1").Scan(&state)
		return err == nil && state == want
	}, 20*time.Second, 50*time.Millisecond, "the standby never streamed as %s", want)
	return &pair{binDir: binDir, primary: primary, standby: standby}
}

// dsn names both servers; libpq semantics (pgx implements them): try each
// host in turn and keep the one that accepts writes.
func (p *pair) dsn() string {
	return fmt.Sprintf("host=%s,%s port=%d,%d user=postgres dbname=hoox sslmode=disable target_session_attrs=read-write connect_timeout=2",
		p.primary.SocketDir(), p.standby.SocketDir(), p.primary.Port(), p.standby.Port())
}

// failover crashes the primary (an immediate stop: a power cut for
// Postgres) and promotes the standby, returning when each was done. It
// runs on a sender's goroutine, so it returns its error instead of failing
// the test.
func (p *pair) failover() (down, promoted time.Time, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.primary.Crash(ctx); err != nil {
		return down, promoted, err
	}
	down = time.Now()
	conn, err := pgx.Connect(ctx, p.standby.URL("postgres"))
	if err != nil {
		return down, promoted, err
	}
	defer conn.Close(ctx)
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_promote(true, 30)").Scan(&ok); err != nil || !ok {
		return down, promoted, fmt.Errorf("promote: %v (promoted %v)", err, ok)
	}
	return down, time.Now(), nil
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func startHoox(t *testing.T, dsn string, mutate ...func(*app.Config)) (*app.App, error) {
	t.Helper()
	cfg := app.DefaultConfig()
	cfg.DatabaseURL = dsn
	cfg.Addr = "127.0.0.1:0"
	cfg.API.WebhookSecret = secret
	cfg.DBMaxConns = 8
	cfg.DBMinConns = 2
	cfg.NoMigrate = true
	cfg.Jobs.SweepInterval = time.Second
	cfg.Jobs.SweepGrace = 2 * time.Second
	for _, m := range mutate {
		m(&cfg)
	}
	a, err := app.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	return a, nil
}

// answer is what a sender got for one attempt.
type answer struct {
	sent   time.Time
	status int
	ctype  string
	code   string
	at     time.Time
}

func send(base, key string) answer {
	sent := time.Now()
	body := fmt.Sprintf(`{"secret":%q,"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":%q}`, secret, key)
	res, err := client.Post(base+"/webhook", "application/json", strings.NewReader(body))
	if err != nil {
		return answer{sent: sent, status: -1, code: err.Error(), at: time.Now()}
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var p struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(b, &p)
	return answer{sent: sent, status: res.StatusCode, ctype: res.Header.Get("Content-Type"), code: p.Code, at: time.Now()}
}

// TestFailoverSynchronous: with a synchronous standby, promoting it under
// load costs clean 503s only (which the senders retry), never a second
// order, never a lost one: every signal ends with exactly one fill.
func TestFailoverSynchronous(t *testing.T) {
	if testing.Short() {
		t.Skip("failover drill: starts two PostgreSQL servers")
	}
	p := startPair(t, "*")
	a, err := startHoox(t, p.dsn())
	require.NoError(t, err)
	base := "http://" + a.Addr()

	const (
		signals = 300
		senders = 8
		crashAt = 100 // signals settled before the primary dies
	)
	var (
		settled    atomic.Int64
		crashOnce  sync.Once
		down, up   time.Time
		drillErr   error
		refused    []answer
		mu         sync.Mutex
		statuses   = map[string]int{}
		unexpected []string
		finals     = make([]answer, signals)
	)
	deadline := time.Now().Add(45 * time.Second)
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := s; i < signals; i += senders {
				key := fmt.Sprintf("fo-%d", i)
				for attempt := 0; ; attempt++ {
					ans := send(base, key)
					mu.Lock()
					statuses[fmt.Sprintf("%d %s", ans.status, ans.code)]++
					if ans.status == http.StatusServiceUnavailable {
						refused = append(refused, ans)
					}
					clean503 := ans.status == http.StatusServiceUnavailable && ans.ctype == "application/problem+json" && ans.code == "unavailable"
					if ans.status >= 500 && !clean503 || ans.status < 0 || ans.status == http.StatusUnprocessableEntity {
						unexpected = append(unexpected, fmt.Sprintf("%s: %d %s %s", key, ans.status, ans.ctype, ans.code))
					}
					mu.Unlock()
					if ans.status == http.StatusOK || ans.status == http.StatusAccepted || ans.status == http.StatusConflict && ans.code == "duplicate" {
						finals[i] = ans
						if settled.Add(1) == crashAt {
							crashOnce.Do(func() { down, up, drillErr = p.failover() })
						}
						break
					}
					if time.Now().After(deadline) {
						mu.Lock()
						unexpected = append(unexpected, key+": never settled")
						mu.Unlock()
						break
					}
					// A sender's retry (TradingView waits 5 s; this one less).
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, drillErr)
	require.False(t, down.IsZero(), "the primary was never crashed")
	require.Empty(t, unexpected, "answers other than 200, 202, 409 duplicate and a clean 503")

	// How long signals were refused: from the crash to the first signal
	// sent after it that was placed.
	var firstPlaced time.Time
	for _, f := range finals {
		if f.status == http.StatusOK && f.sent.After(down) && (firstPlaced.IsZero() || f.sent.Before(firstPlaced)) {
			firstPlaced = f.sent
		}
	}
	var last503 time.Time
	for _, r := range refused {
		if r.at.After(last503) {
			last503 = r.at
		}
	}
	ms := func(at time.Time) string {
		if at.IsZero() {
			return "-"
		}
		return at.Sub(down).Round(time.Millisecond).String()
	}
	t.Logf("failover drill (synchronous): %d signals, %d senders, primary crashed after %d settled; promoted %s after the crash; "+
		"last 503 answered at %s, first signal placed was sent at %s; answers %v",
		signals, senders, crashAt, ms(up), ms(last503), ms(firstPlaced), statuses)

	// On the new primary: once nothing is left to reconcile or sweep, every
	// signal has exactly one order and one fill at the paper venue.
	pool, err := pgxpool.New(context.Background(), p.standby.URL("hoox"))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	ctx := context.Background()
	require.Eventually(t, func() bool {
		var open int
		err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM trace_ids WHERE status = 'reconciling')
		                                + (SELECT count(*) FROM dispatch_intents WHERE outcome IS NULL)`).Scan(&open)
		return err == nil && open == 0
	}, 30*time.Second, 100*time.Millisecond, "reconciles and the sweeper never settled")
	var traces, orders, fills, doubled, unrecorded int
	require.NoError(t, pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM trace_ids WHERE trace_id LIKE 'k:fo-%'),
		       (SELECT count(*) FROM orders WHERE trace_id LIKE 'k:fo-%'),
		       (SELECT count(*) FROM paper_orders),
		       (SELECT count(*) FROM (SELECT trace_id FROM orders GROUP BY trace_id HAVING count(*) > 1) d),
		       (SELECT count(*) FROM paper_orders p WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.client_order_id = p.client_order_id))`).
		Scan(&traces, &orders, &fills, &doubled, &unrecorded))
	require.Equal(t, signals, traces, "every signal is recorded")
	require.Equal(t, signals, orders, "one order per signal: none lost")
	require.Equal(t, signals, fills, "one fill per signal at the venue: no second order")
	require.Zero(t, doubled)
	require.Zero(t, unrecorded, "no fill without its order row")
}

// TestFailoverAsynchronous: with an asynchronous standby hoox refuses to
// start (HOOX_ALLOW_ASYNC_REPLICATION overrides it and the metric says so),
// and the drill shows what a failover then loses: signals hoox answered
// 200 are gone from the promoted standby, so their resends execute again —
// at a real venue, a second order.
func TestFailoverAsynchronous(t *testing.T) {
	if testing.Short() {
		t.Skip("failover drill: starts two PostgreSQL servers")
	}
	p := startPair(t, "")
	_, err := startHoox(t, p.dsn())
	require.ErrorContains(t, err, "synchronous_standby_names is empty")

	a, err := startHoox(t, p.dsn(), func(c *app.Config) { c.AllowAsyncReplication = true })
	require.NoError(t, err)
	base := "http://" + a.Addr()
	res, err := client.Get(base + "/metrics")
	require.NoError(t, err)
	metrics, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Contains(t, string(metrics), "hoox_db_async_replication 1")

	// The standby falls behind: its WAL receiver stops (a network
	// partition, a slow disk). Asynchronous commits do not wait for it.
	ctx := context.Background()
	sconn := connect(t, p.standby.URL("postgres"))
	_, err = sconn.Exec(ctx, "ALTER SYSTEM SET primary_conninfo = ''")
	require.NoError(t, err)
	_, err = sconn.Exec(ctx, "SELECT pg_reload_conf()")
	require.NoError(t, err)
	pconn := connect(t, p.primary.URL("postgres"))
	require.Eventually(t, func() bool {
		var n int
		return pconn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_replication").Scan(&n) == nil && n == 0
	}, 20*time.Second, 50*time.Millisecond, "the standby never stopped streaming")

	const acknowledged = 20
	for i := 0; i < acknowledged; i++ {
		ans := send(base, fmt.Sprintf("async-%d", i))
		require.Equal(t, http.StatusOK, ans.status, "signal %d", i)
	}
	_, _, err = p.failover()
	require.NoError(t, err)

	// hoox follows the promoted standby; each resend is retried through
	// the failover's 503s until it is settled, and its first settled answer
	// says whether the signal was still known.
	executedAgain := 0
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < acknowledged; i++ {
		for {
			ans := send(base, fmt.Sprintf("async-%d", i))
			if ans.status == http.StatusOK {
				executedAgain++
				break
			}
			if ans.status == http.StatusConflict {
				break
			}
			require.Equal(t, http.StatusServiceUnavailable, ans.status, "resend %d: %s", i, ans.code)
			require.True(t, time.Now().Before(deadline), "hoox never followed the promoted standby")
			time.Sleep(100 * time.Millisecond) // the sender's retry
		}
	}
	t.Logf("failover drill (asynchronous, standby behind): %d signals answered 200 before the failover; after it %d resends executed again (the records were lost), %d were duplicates",
		acknowledged, executedAgain, acknowledged-executedAgain)
	require.Equal(t, acknowledged, executedAgain, "every commit the standby had not received is lost")
}
