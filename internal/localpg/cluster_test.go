package localpg

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// helperDirEnv makes the test binary act as a hoox process that owns a
// cluster until it is killed (see TestHelperOwner).
const helperDirEnv = "LOCALPG_TEST_HELPER_DATA_DIR"

// testDir returns a fresh dir the postgres user can enter even when the
// tests run as root (t.TempDir is 0700), removed after the test.
func testDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hoox-localpg-test-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func startCluster(t *testing.T, cfg Config) *Cluster {
	t.Helper()
	cfg.Fast = true
	c, err := Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Remove(context.Background())) })
	return c
}

func queryInt(t *testing.T, url, query string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int
	require.NoError(t, conn.QueryRow(ctx, query).Scan(&n))
	return n
}

func exec1(t *testing.T, url, stmt string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, stmt)
	require.NoError(t, err)
}

func TestFindBinDir(t *testing.T) {
	t.Parallel()
	dir, err := FindBinDir()
	require.NoError(t, err)
	for _, name := range serverBinaries {
		require.FileExists(t, filepath.Join(dir, name))
	}
}

func TestVersionOrdering(t *testing.T) {
	t.Parallel()
	require.Greater(t, versionOf("/usr/lib/postgresql/15/bin"), versionOf("/usr/lib/postgresql/9.6/bin"))
	require.Greater(t, versionOf("/usr/pgsql-16/bin"), versionOf("/usr/lib/postgresql/15/bin"))
}

func TestStartConnectStopRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dataDir := filepath.Join(testDir(t), "pg")
	c := startCluster(t, Config{DataDir: dataDir})

	require.Equal(t, 1, queryInt(t, c.URL("postgres"), "SELECT 1"))
	require.Equal(t, 200, queryInt(t, c.URL("postgres"), "SELECT current_setting('max_connections')::int"))
	require.Equal(t, 0, queryInt(t, c.URL("postgres"), "SELECT count(*) FROM pg_settings WHERE name = 'listen_addresses' AND setting <> ''"),
		"the server must not listen on TCP")
	exec1(t, c.URL("postgres"), "CREATE TABLE kept (id int)")

	require.NoError(t, c.Stop(ctx))
	require.NoError(t, c.Stop(ctx), "Stop is idempotent")
	_, err := pgx.Connect(ctx, c.URL("postgres"))
	require.Error(t, err, "a stopped server accepts no connections")

	require.NoError(t, c.Start(ctx))
	require.Equal(t, 1, queryInt(t, c.URL("postgres"), "SELECT count(*) FROM pg_tables WHERE tablename = 'kept'"),
		"data survives a restart")
}

func TestRemoveDeletesEverything(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(testDir(t), "pg")
	c, err := Start(context.Background(), Config{DataDir: dataDir, Fast: true})
	require.NoError(t, err)
	require.NoError(t, c.Remove(context.Background()))
	require.NoDirExists(t, dataDir)
	require.NoFileExists(t, dataDir+".lock")
}

func TestStartTwiceIsAlreadyRunning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dataDir := filepath.Join(testDir(t), "pg")
	c := startCluster(t, Config{DataDir: dataDir})

	_, err := Start(ctx, Config{DataDir: dataDir, Fast: true})
	require.ErrorIs(t, err, ErrAlreadyRunning)
	require.Contains(t, err.Error(), "in use by another running hoox process")
	require.Equal(t, 1, queryInt(t, c.URL("postgres"), "SELECT 1"), "the failed second start left the first server alone")

	require.NoError(t, c.Stop(ctx))
	second, err := Start(ctx, Config{DataDir: dataDir, Fast: true})
	require.NoError(t, err, "once the owner stopped, the data dir is free")
	require.NoError(t, second.Stop(ctx))
}

// TestRecoversFromKilledServer covers a previous owner and its server both
// killed with -9: postmaster.pid names a dead process.
func TestRecoversFromKilledServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dataDir := filepath.Join(testDir(t), "pg")
	c := startCluster(t, Config{DataDir: dataDir})
	pm, ok := readPostmasterPID(c.DataDir())
	require.True(t, ok)
	require.NoError(t, syscall.Kill(pm.pid, syscall.SIGKILL))
	// The owner dies too: its lock goes, postmaster.pid stays.
	require.NoError(t, c.lock.Close())
	c.lock = nil
	require.Eventually(t, func() bool { return !processAlive(pm.pid) }, 10*time.Second, 10*time.Millisecond)
	require.FileExists(t, filepath.Join(c.DataDir(), "postmaster.pid"))

	again, err := Start(ctx, Config{DataDir: dataDir, Fast: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = again.Stop(ctx) })
	require.Equal(t, 1, queryInt(t, again.URL("postgres"), "SELECT 1"))
}

// TestRecoversFromReusedPID covers a postmaster.pid whose pid now belongs to
// an unrelated live process, which Postgres alone would refuse to start over.
func TestRecoversFromReusedPID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dataDir := filepath.Join(testDir(t), "pg")
	c := startCluster(t, Config{DataDir: dataDir})
	require.NoError(t, c.Stop(ctx))

	sleeper := exec.Command("sleep", "60")
	require.NoError(t, sleeper.Start())
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	pidFile := filepath.Join(c.DataDir(), "postmaster.pid")
	content := strings.Join([]string{strconv.Itoa(sleeper.Process.Pid), c.DataDir(), "0", "5432", c.SocketDir(), "", "0 0", "ready   "}, "\n") + "\n"
	require.NoError(t, os.WriteFile(pidFile, []byte(content), 0o600))

	require.NoError(t, c.Start(ctx))
	require.Equal(t, 1, queryInt(t, c.URL("postgres"), "SELECT 1"))
	require.True(t, processAlive(sleeper.Process.Pid), "the unrelated process was left alone")
}

// TestRecoversOrphanedServer covers a hoox killed with -9 whose postgres
// kept running: a second owner is refused while the first lives, and takes
// over (stopping the orphan) once it is dead.
func TestRecoversOrphanedServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dataDir := filepath.Join(testDir(t), "pg")

	owner := exec.Command(os.Args[0], "-test.run=^TestHelperOwner$", "-test.count=1")
	owner.Env = append(os.Environ(), helperDirEnv+"="+dataDir)
	owner.Stderr = os.Stderr
	out, err := owner.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, owner.Start())
	t.Cleanup(func() { _ = owner.Process.Kill(); _ = owner.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)

	_, err = Start(ctx, Config{DataDir: dataDir, Fast: true})
	require.ErrorIs(t, err, ErrAlreadyRunning, "a live owner keeps its cluster")

	pidFile, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	require.NoError(t, err)
	orphan := atoi(t, strings.SplitN(string(pidFile), "\n", 2)[0])
	require.NoError(t, owner.Process.Signal(syscall.SIGKILL))
	_ = owner.Wait()
	require.True(t, isPostgres(orphan), "postgres outlives its killed owner")

	c := startCluster(t, Config{DataDir: dataDir})
	require.Equal(t, 1, queryInt(t, c.URL("postgres"), "SELECT 1"))
	require.False(t, processAlive(orphan), "the orphan was stopped")
	pm, ok := readPostmasterPID(c.DataDir())
	require.True(t, ok)
	require.NotEqual(t, orphan, pm.pid)
}

// TestHelperOwner is not a test: it is the owner process that
// TestRecoversOrphanedServer kills.
func TestHelperOwner(t *testing.T) {
	dir := os.Getenv(helperDirEnv)
	if dir == "" {
		t.Skip("helper process for TestRecoversOrphanedServer")
	}
	_, err := Start(context.Background(), Config{DataDir: dir, Fast: true})
	require.NoError(t, err)
	_, _ = os.Stdout.WriteString("ready\n")
	select {} // until killed
}

func TestLongSocketPathUsesShortDir(t *testing.T) {
	t.Parallel()
	long := filepath.Join(testDir(t), strings.Repeat("d", 60), strings.Repeat("e", 40))
	c := startCluster(t, Config{DataDir: filepath.Join(long, "pg")})
	require.LessOrEqual(t, len(socketPath(c.SocketDir(), c.Port())), maxSocketPath)
	require.NotContains(t, c.SocketDir(), long)
	require.Equal(t, 1, queryInt(t, c.URL("postgres"), "SELECT 1"))
	socketDir := c.SocketDir()
	require.NoError(t, c.Remove(context.Background()))
	require.NoDirExists(t, socketDir, "Remove deletes the short socket dir it made")
}

func TestRootFallsBackToReachableDataDir(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("only root's private dirs are unreachable for the postgres user")
	}
	private := t.TempDir() // mode 0700, owned by root
	dataDir := filepath.Join(private, "pg")
	c := startCluster(t, Config{DataDir: dataDir})
	require.True(t, strings.HasPrefix(c.DataDir(), fallbackRoot+"/"), c.DataDir())
	target, err := os.Readlink(dataDir)
	require.NoError(t, err)
	require.Equal(t, c.DataDir(), target, "the requested path leads to the cluster")
	require.Equal(t, 1, queryInt(t, c.URL("postgres"), "SELECT 1"))

	real := c.DataDir()
	require.NoError(t, c.Remove(context.Background()))
	require.NoDirExists(t, real)
}

func TestURLQuotesValues(t *testing.T) {
	t.Parallel()
	c := &Cluster{socketDir: "/tmp/a b", port: 5433}
	require.Equal(t, `host='/tmp/a b' port=5433 user=postgres dbname='it\'s' sslmode=disable`, c.URL("it's"))
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(s))
	require.NoError(t, err)
	return n
}
