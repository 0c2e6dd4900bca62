package pgtest

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/localpg"
)

// helperEnv makes the test binary act as a test run that is killed while
// its cluster runs (see TestHelperInterruptedRun).
const helperEnv = "HOOX_HARNESS_TEST_HELPER"

func TestChoose(t *testing.T) {
	t.Parallel()
	noDocker := func() bool { return false }
	bins := func() (string, error) { return "/usr/lib/postgresql/15/bin", nil }
	noBins := func() (string, error) { return "", localpg.ErrNoBinaries }

	src, err := choose("postgres://x/y", func() bool { t.Fatal("Docker probed although TEST_DATABASE_URL is set"); return false }, noBins)
	require.NoError(t, err)
	require.Equal(t, SourceEnv, src)

	src, err = choose("", func() bool { return true }, bins)
	require.NoError(t, err)
	require.Equal(t, SourceDocker, src)

	src, err = choose("", noDocker, bins)
	require.NoError(t, err)
	require.Equal(t, SourceLocal, src)

	_, err = choose("", noDocker, noBins)
	require.ErrorIs(t, err, localpg.ErrNoBinaries)
	require.Contains(t, err.Error(), "TEST_DATABASE_URL")
	require.Contains(t, err.Error(), "apt-get install postgresql")
}

func TestDockerProbeFailsFast(t *testing.T) {
	t.Parallel()
	start := time.Now()
	up := dockerUp(context.Background())
	if !up {
		require.Less(t, time.Since(start), 2500*time.Millisecond, "a missing Docker engine must not stall the tests")
	}
}

func TestWithDatabase(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"postgres://u:p@localhost:5432/postgres?sslmode=disable",
		"postgresql://u@/postgres?host=/tmp/s&port=5432",
		"host=/tmp/s port=5432 user=postgres dbname=postgres sslmode=disable",
		"host=/tmp/s dbname='a b' user=postgres",
		"host=/tmp/s user=postgres",
	} {
		out, err := withDatabase(in, "hoox_1_x")
		require.NoError(t, err)
		cfg, err := pgx.ParseConfig(out)
		require.NoError(t, err, out)
		require.Equal(t, "hoox_1_x", cfg.Database, out)
		require.NotEmpty(t, cfg.Host, out)
	}
}

// TestSharedServerFromEnv points a second harness at another cluster through
// TEST_DATABASE_URL: it must use that server, and leave nothing on it.
func TestSharedServerFromEnv(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	shared := NewCluster(t)
	h := newHarness()
	h.getenv = func(key string) string {
		if key == EnvDatabaseURL {
			return shared.URL("postgres")
		}
		return ""
	}
	require.NoError(t, h.ensure(ctx))
	require.Equal(t, SourceEnv, h.source)
	name, err := h.newDatabase(ctx, t.Name())
	require.NoError(t, err)

	admin, err := pgx.Connect(ctx, shared.URL("postgres"))
	require.NoError(t, err)
	defer admin.Close(ctx)
	ours := func() []string {
		rows, err := admin.Query(ctx, "SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY 1", "hoox_"+h.runID)
		require.NoError(t, err)
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return names
	}
	require.Equal(t, []string{name, "hoox_" + h.runID + "_template"}, ours(), "template named per run, test database on the shared server")

	require.NoError(t, h.close(ctx))
	require.Empty(t, ours(), "closing drops the template and databases a killed test left")
	require.NoError(t, admin.Ping(ctx), "the shared server keeps running")
}

// TestSweepRemovesClustersOfDeadRuns kills a test run (as go test's timeout
// or kill -9 would) while its cluster runs; the next run stops and removes
// it.
func TestSweepRemovesClustersOfDeadRuns(t *testing.T) {
	t.Parallel()
	if _, err := localpg.FindBinDir(); err != nil {
		t.Skip(err)
	}
	run := exec.Command(os.Args[0], "-test.run=^TestHelperInterruptedRun$", "-test.count=1")
	run.Env = append(os.Environ(), helperEnv+"=1")
	run.Stderr = os.Stderr
	out, err := run.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, run.Start())
	t.Cleanup(func() { _ = run.Process.Kill(); _ = run.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	dir := strings.TrimSpace(line)
	require.True(t, strings.HasPrefix(filepath.Base(dir), tempPrefix), dir)
	pidFile, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	require.NoError(t, err)
	postmaster := strings.SplitN(string(pidFile), "\n", 2)[0]

	require.NoError(t, run.Process.Signal(syscall.SIGKILL))
	_ = run.Wait()
	require.DirExists(t, dir, "a killed run runs no cleanup")

	sweep(context.Background())
	require.NoDirExists(t, dir)
	require.Eventually(t, func() bool {
		// Gone, or a zombie that a container's init has yet to reap.
		stat, err := os.ReadFile("/proc/" + postmaster + "/stat")
		return errors.Is(err, os.ErrNotExist) || strings.Contains(string(stat), ") Z ")
	}, 10*time.Second, 20*time.Millisecond, "the leftover server was stopped")
}

// TestHelperInterruptedRun is not a test: it is the run that
// TestSweepRemovesClustersOfDeadRuns kills.
func TestHelperInterruptedRun(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("helper process for TestSweepRemovesClustersOfDeadRuns")
	}
	lb, err := startLocal(context.Background())
	require.NoError(t, err)
	_, _ = os.Stdout.WriteString(lb.dir + "\n")
	select {} // until killed
}
