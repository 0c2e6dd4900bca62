package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/app"
	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/internal/testutil"
)

// startPgBouncer runs a transaction-pooling PgBouncer in front of dbURL and
// returns a connection string through it. It skips the test where PgBouncer
// is not installed (.ci/run installs it).
func startPgBouncer(t *testing.T, dbURL string) string {
	t.Helper()
	return startPgBouncerSized(t, dbURL, 20)
}

// startPgBouncerSized is startPgBouncer with poolSize server connections.
func startPgBouncerSized(t *testing.T, dbURL string, poolSize int) string {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		bin = "/usr/sbin/pgbouncer"
		if _, err := os.Stat(bin); err != nil {
			t.Skip("pgbouncer is not installed")
		}
	}
	target, err := pgx.ParseConfig(dbURL)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())

	dir := t.TempDir()
	// As root PgBouncer runs as the postgres user, who must reach the dir.
	require.NoError(t, os.Chmod(dir, 0o777))
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	ini := fmt.Sprintf(`[databases]
hoox = host=%s port=%d dbname=%s user=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
max_client_conn = 500
default_pool_size = %d
ignore_startup_parameters = extra_float_digits
logfile = %s
`, target.Host, target.Port, target.Database, target.User, port,
		filepath.Join(dir, "users.txt"), poolSize, filepath.Join(dir, "pgbouncer.log"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "users.txt"), []byte(`"`+target.User+`" ""`+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pgbouncer.ini"), []byte(ini), 0o644))

	args := []string{bin, filepath.Join(dir, "pgbouncer.ini")}
	if os.Geteuid() == 0 {
		// PgBouncer refuses to run as root.
		if _, err := user.Lookup("postgres"); err != nil {
			t.Skip("running as root without a postgres user for PgBouncer")
		}
		args = append([]string{"runuser", "-u", "postgres", "--"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &testutil.LogBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		_ = cmd.Wait()
	})
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 30*time.Second, 20*time.Millisecond, "pgbouncer did not start: %s", out)
	return fmt.Sprintf("host=127.0.0.1 port=%d user=%s dbname=hoox sslmode=disable", port, target.User)
}

// Two replicas behind a transaction-pooling PgBouncer still place one order
// per signal: the advisory lock is transaction-scoped, so it holds through
// the pooler.
func TestThroughPgBouncerInTransactionMode(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	bouncer := startPgBouncer(t, dbURL)
	viaBouncer := func(c *app.Config) { c.TxPooler, c.Jobs.Workers = true, 2 }
	b := apptest.Start(t, bouncer, viaBouncer)
	c := apptest.Start(t, bouncer, viaBouncer)
	pool := pgtest.OpenPool(t, dbURL)

	const n = 200
	apptest.RequireOneWinner(t, apptest.Storm(t, []string{b.URL, c.URL}, apptest.Signal(`"trace_id":"bounced"`), n), n)
	for i := range 20 {
		r := apptest.Post(t, []string{b.URL, c.URL}[i%2], apptest.Signal(fmt.Sprintf(`"trace_id":"bounced-%d"`, i)))
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
	}
	require.Equal(t, 21, apptest.Count(t, pool, "SELECT count(*) FROM orders"))
	require.Equal(t, 21, apptest.Fills(t, pool))

	// Migrating through the pooler is refused with the way out.
	cfg := app.DefaultConfig()
	cfg.DatabaseURL, cfg.TxPooler, cfg.API.WebhookSecret = bouncer, true, apptest.Secret
	_, err := app.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "--no-migrate")
}

// More concurrent new signals than the pooler has server connections must
// not starve: a claim holds its server connection across the venue call
// and then needs the intent's, so if hoox's claims alone could take every
// server connection, each would wait for one that never frees. In pooler
// mode HOOX_DB_MAX_CONNS is hoox's whole budget, split between the pools,
// so with a budget no larger than the pooler's pool nothing waits on it.
func TestPgBouncerSmallerThanTheSendersDoesNotStarve(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("needs pgbouncer and concurrent load")
	}
	dbURL := pgtest.NewDatabase(t)
	const poolSize = 4
	bouncer := startPgBouncerSized(t, dbURL, poolSize)
	b := apptest.Start(t, bouncer, func(c *app.Config) {
		c.TxPooler, c.DBMaxConns, c.Jobs.Workers = true, poolSize, 1
	})
	pool := pgtest.OpenPool(t, dbURL)

	const n = 6 * poolSize // senders, all at once, each a new signal
	bodies := make([]string, n)
	for i := range bodies {
		bodies[i] = b.URL + "|" + apptest.Signal(fmt.Sprintf(`"trace_id":"starve-%d"`, i))
	}
	statuses := apptest.SendAll(bodies, n, nil)
	for i, st := range statuses {
		require.Equal(t, http.StatusOK, st, "signal %d (0: no answer within the client's 20 s)", i)
	}
	require.Equal(t, n, apptest.Count(t, pool, "SELECT count(*) FROM orders"))
	require.Equal(t, n, apptest.Fills(t, pool))
}
