package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/client"
	tc "github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"

	"github.com/hoox/hoox/internal/localpg"
)

// Source names where the harness got its server from.
type Source string

// The servers the harness can use, in order of preference.
const (
	// SourceEnv is the server named by TEST_DATABASE_URL.
	SourceEnv Source = "TEST_DATABASE_URL"
	// SourceDocker is a postgres:16-alpine container from testcontainers-go.
	SourceDocker Source = "docker"
	// SourceLocal is a throwaway cluster from the installed server binaries.
	SourceLocal Source = "local"
)

// EnvDatabaseURL names the environment variable pointing the harness at an
// existing server; the tests create and drop databases on it.
const EnvDatabaseURL = "TEST_DATABASE_URL"

// dockerImage is the Postgres the container backend runs.
const dockerImage = "postgres:16-alpine"

// tempPrefix starts the name of every throwaway cluster dir, followed by
// the owning test process's pid, so a later run can tell which are orphans.
const tempPrefix = "hoox-pg-"

// choose picks the server in order of preference. Its inputs are
// functions so that the choice can be tested without Docker or binaries,
// and so that the slower probes run only when needed.
func choose(envURL string, dockerUp func() bool, binDir func() (string, error)) (Source, error) {
	if envURL != "" {
		return SourceEnv, nil
	}
	if dockerUp() {
		return SourceDocker, nil
	}
	if _, err := binDir(); err != nil {
		return "", fmt.Errorf("no test database: set %s, start a Docker engine, or install the PostgreSQL server: %w", EnvDatabaseURL, err)
	}
	return SourceLocal, nil
}

// backend is a running server the harness can drop and recreate databases
// on.
type backend interface {
	adminURL() string
	close(ctx context.Context) error
}

type envBackend struct{ url string }

func (b envBackend) adminURL() string                { return b.url }
func (b envBackend) close(ctx context.Context) error { return nil }

type dockerBackend struct {
	ctr *tcpostgres.PostgresContainer
	url string
}

func (b dockerBackend) adminURL() string { return b.url }
func (b dockerBackend) close(ctx context.Context) error {
	return tc.TerminateContainer(b.ctr)
}

func startDocker(ctx context.Context) (backend, error) {
	ctr, err := tcpostgres.Run(ctx, dockerImage,
		tcpostgres.WithDatabase("postgres"),
		tcpostgres.WithUsername("postgres"),
		tcpostgres.WithPassword("postgres"),
		tc.WithCmd("postgres", "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=200"),
		tcpostgres.BasicWaitStrategies(),
	)
	if err != nil {
		if ctr != nil {
			_ = tc.TerminateContainer(ctr)
		}
		return nil, fmt.Errorf("start postgres container: %w", err)
	}
	u, err := ctr.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		_ = tc.TerminateContainer(ctr)
		return nil, fmt.Errorf("container connection string: %w", err)
	}
	return dockerBackend{ctr: ctr, url: u}, nil
}

// localBackend is a throwaway cluster in its own temp dir.
type localBackend struct {
	cluster *localpg.Cluster
	dir     string
}

func (b localBackend) adminURL() string { return b.cluster.URL("postgres") }
func (b localBackend) close(ctx context.Context) error {
	err := b.cluster.Remove(ctx)
	return errors.Join(err, os.RemoveAll(b.dir))
}

// startLocal starts a cluster in a new temp dir named after this process,
// with fsync off: a test cluster does not survive a machine crash anyway.
func startLocal(ctx context.Context) (localBackend, error) {
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", tempPrefix, os.Getpid()))
	if err != nil {
		return localBackend{}, fmt.Errorf("temp dir: %w", err)
	}
	// As root the server runs as the postgres user, which must enter the
	// dir; MkdirTemp makes it 0700. The data dir inside stays private.
	if err := os.Chmod(dir, 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return localBackend{}, fmt.Errorf("temp dir: %w", err)
	}
	c, err := localpg.Start(ctx, localConfig(dir))
	if err != nil {
		_ = os.RemoveAll(dir)
		return localBackend{}, err
	}
	return localBackend{cluster: c, dir: dir}, nil
}

func localConfig(dir string) localpg.Config {
	return localpg.Config{DataDir: filepath.Join(dir, "data"), SocketDir: dir, Fast: true}
}

// sweep removes throwaway clusters whose test process is gone (killed, or
// timed out by go test, which skips every cleanup), stopping their servers
// first, so an interrupted run never leaves clusters behind for good.
func sweep(ctx context.Context) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempPrefix+"*"))
	for _, dir := range dirs {
		pidText, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(dir), tempPrefix), "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() || pidAlive(pid) || !ownedByUs(dir) {
			continue
		}
		if err := localpg.Destroy(ctx, localConfig(dir)); err != nil {
			// Another sweeper got there first, or the dir is not ours to
			// clean: either way, not this run's problem.
			continue
		}
		_ = os.RemoveAll(dir)
	}
}

func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func ownedByUs(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	// As root the harness hands the dir to the postgres user.
	return !ok || int(st.Uid) == os.Geteuid() || os.Geteuid() == 0
}

// dockerUp reports whether a Docker engine answers, within 2 s. It looks
// for an engine before asking testcontainers-go, which panics or waits for
// long timeouts when there is none.
func dockerUp(ctx context.Context) bool {
	if !dockerConfigured() {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	answer := make(chan bool, 1)
	go func() {
		defer func() {
			if recover() != nil {
				answer <- false
			}
		}()
		cli, err := tc.NewDockerClientWithOpts(ctx)
		if err != nil {
			answer <- false
			return
		}
		defer cli.Close()
		_, err = cli.Ping(ctx, client.PingOptions{})
		answer <- err == nil
	}()
	select {
	case ok := <-answer:
		return ok
	case <-ctx.Done():
		return false
	}
}

// dockerConfigured reports whether any of the places testcontainers-go
// looks for an engine is set: DOCKER_HOST, its properties file, or a socket.
func dockerConfigured() bool {
	if os.Getenv("DOCKER_HOST") != "" || os.Getenv("TESTCONTAINERS_DOCKER_SOCKET_OVERRIDE") != "" {
		return true
	}
	home, _ := os.UserHomeDir()
	candidates := []string{"/var/run/docker.sock", "/run/docker.sock"}
	if home != "" {
		candidates = append(candidates,
			filepath.Join(home, ".testcontainers.properties"),
			filepath.Join(home, ".docker", "run", "docker.sock"),
			filepath.Join(home, ".docker", "desktop", "docker.sock"))
	}
	if xdg := os.Getenv("XDG_RUNTIME_DIR"); xdg != "" {
		candidates = append(candidates, filepath.Join(xdg, "docker.sock"), filepath.Join(xdg, "podman", "podman.sock"))
	}
	for _, p := range candidates {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// withDatabase returns the connection string u pointed at database name,
// for both URL and keyword/value forms.
func withDatabase(u, name string) (string, error) {
	if strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://") {
		parsed, err := url.Parse(u)
		if err != nil {
			return "", fmt.Errorf("parse database URL: %w", err)
		}
		parsed.Path = "/" + name
		parsed.RawPath = ""
		q := parsed.Query()
		if q.Has("dbname") {
			q.Set("dbname", name)
			parsed.RawQuery = q.Encode()
		}
		return parsed.String(), nil
	}
	// Test database names are made of [a-z0-9_]: no quoting is needed.
	if dbnameSetting.MatchString(u) {
		return dbnameSetting.ReplaceAllString(u, "${1}dbname="+name), nil
	}
	return u + " dbname=" + name, nil
}

// dbnameSetting finds the dbname of a keyword/value connection string,
// quoted or not.
var dbnameSetting = regexp.MustCompile(`(^|\s)dbname\s*=\s*('(?:[^'\\]|\\.)*'|\S*)`)
