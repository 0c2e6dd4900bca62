package localpg

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrAlreadyRunning reports that another live process (a second `hoox dev`,
// say) owns the cluster in the data dir. Two owners would stop each other's
// server, so the second one must fail instead.
var ErrAlreadyRunning = errors.New("the PostgreSQL data dir is in use by another running hoox process")

// DefaultPort names the socket file (.s.PGSQL.5432). The cluster listens on
// no TCP port, so clusters in different socket dirs never collide on it.
const DefaultPort = 5432

// maxSocketPath is the longest unix socket path Linux accepts (sun_path is
// 108 bytes including the terminating NUL); keep one byte of margin.
const maxSocketPath = 106

// fallbackRoot holds data dirs that the postgres user cannot reach where the
// caller asked for them (as root, under /root which is mode 0700).
const fallbackRoot = "/var/lib/hoox"

// Config describes a local cluster. Only DataDir is required.
type Config struct {
	// DataDir is the cluster's data directory. It is created and initialised
	// with initdb when it holds no cluster yet.
	DataDir string
	// SocketDir holds the unix socket. Empty means the data dir itself;
	// a dir whose socket path would exceed the kernel's limit is replaced by
	// a short one under os.TempDir().
	SocketDir string
	// Port names the socket (.s.PGSQL.<port>); 0 means DefaultPort.
	Port int
	// BinDir holds initdb, pg_ctl and postgres; empty means FindBinDir.
	BinDir string
	// Logger receives what the cluster does; nil discards it.
	Logger *slog.Logger
	// LogFile receives the server's log; empty means postgres.log in the
	// data dir.
	LogFile string
	// Fast turns off fsync and full-page writes: a crash of the machine can
	// then corrupt the cluster, which only throwaway test clusters accept.
	Fast bool
	// Settings are extra server settings, each "name=value", passed to
	// postgres as -c options (hoox dev's production-like tuning, the
	// benchmark's experiments).
	Settings []string
}

// ProductionSettings are the server settings docs/BENCHMARKS.md measured
// for hoox's write pattern and the README recommends for production; hoox
// dev runs with them. wal_compression=lz4 shrinks the full-page images
// after each checkpoint (hoox's trace and order keys are spread across
// their indexes), and a larger max_wal_size keeps checkpoints on their
// timer instead of being forced by WAL volume under load.
func ProductionSettings() []string {
	return []string{"wal_compression=lz4", "max_wal_size=2GB"}
}

// Cluster is a local PostgreSQL server. It is safe for concurrent use.
type Cluster struct {
	logger    *slog.Logger
	binDir    string
	dataDir   string // where postgres keeps its files (after any fallback)
	linkDir   string // the caller's DataDir when it is a symlink to dataDir
	socketDir string
	ownSocket bool // socketDir was made by us and is removed with the cluster
	port      int
	logFile   string
	lockPath  string
	fast      bool
	settings  []string
	pgUser    *osUser // non-nil when running as root

	mu   sync.Mutex
	lock *os.File // the held flock; nil while stopped
}

// Start initialises the cluster when needed and starts it. It returns an
// error wrapping ErrAlreadyRunning when another live process owns the data
// dir. It recovers from a previous owner that died without stopping the
// server (kill -9): a stale postmaster.pid, or a server still running with no
// owner, which is stopped and started again.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	c, err := newCluster(cfg)
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

func newCluster(cfg Config) (*Cluster, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("localpg: Config.DataDir is required")
	}
	c := &Cluster{logger: cfg.Logger, port: cfg.Port, fast: cfg.Fast, settings: cfg.Settings, binDir: cfg.BinDir}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if c.port == 0 {
		c.port = DefaultPort
	}
	if c.binDir == "" {
		dir, err := FindBinDir()
		if err != nil {
			return nil, err
		}
		c.binDir = dir
	} else if !hasServerBinaries(c.binDir) {
		return nil, errNoBinariesIn(c.binDir)
	}
	abs, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("create parent of data dir: %w", err)
	}
	// The lock sits beside the data dir: initdb wants the data dir empty,
	// and the lock must exist before it.
	c.lockPath = abs + ".lock"
	c.dataDir = abs
	if os.Geteuid() == 0 {
		if c.pgUser, err = lookupUser("postgres"); err != nil {
			return nil, fmt.Errorf("running as root needs a 'postgres' user to run the server as (apt-get install postgresql creates it): %w", err)
		}
		if err := c.resolveRootDataDir(abs); err != nil {
			return nil, err
		}
	}
	c.logFile = cfg.LogFile
	if c.logFile == "" {
		c.logFile = filepath.Join(c.dataDir, "postgres.log")
	} else if c.logFile, err = filepath.Abs(c.logFile); err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	if err := c.chooseSocketDir(cfg.SocketDir); err != nil {
		return nil, err
	}
	return c, nil
}

// resolveRootDataDir moves the data dir somewhere the postgres user can
// reach when the requested place is behind a directory only root may enter.
// The requested path becomes a symlink so that the next start finds the
// same cluster.
func (c *Cluster) resolveRootDataDir(abs string) error {
	if target, err := os.Readlink(abs); err == nil {
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(abs), target)
		}
		c.linkDir, c.dataDir = abs, target
		return nil
	}
	if c.pgUser.canEnter(filepath.Dir(abs)) {
		return nil
	}
	sum := sha256.Sum256([]byte(abs))
	target := filepath.Join(fallbackRoot, hex.EncodeToString(sum[:6]))
	if fi, err := os.Lstat(abs); err == nil {
		entries, _ := os.ReadDir(abs)
		if !fi.IsDir() || len(entries) > 0 {
			return fmt.Errorf("data dir %s is not reachable by the postgres user (a parent directory is private) and is not empty; move it somewhere postgres can enter", abs)
		}
		if err := os.Remove(abs); err != nil {
			return fmt.Errorf("replace empty data dir with a symlink: %w", err)
		}
	}
	if err := os.MkdirAll(fallbackRoot, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", fallbackRoot, err)
	}
	if err := os.Symlink(target, abs); err != nil {
		return fmt.Errorf("link data dir to %s: %w", target, err)
	}
	c.logger.Warn("postgres user cannot reach the data dir; keeping the cluster elsewhere and linking to it",
		slog.String("data_dir", abs), slog.String("real_data_dir", target))
	c.linkDir, c.dataDir = abs, target
	return nil
}

// chooseSocketDir keeps the socket in the requested dir (the data dir by
// default) unless its path would be too long for the kernel or, as root,
// the postgres user could not create it there.
func (c *Cluster) chooseSocketDir(requested string) error {
	dir := requested
	if dir == "" {
		dir = c.dataDir
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("socket dir: %w", err)
	}
	usable := len(socketPath(abs, c.port)) <= maxSocketPath
	if usable && requested != "" {
		if err := os.MkdirAll(abs, 0o700); err != nil {
			return fmt.Errorf("create socket dir: %w", err)
		}
		if c.pgUser != nil {
			// The server creates the socket, so it must own the dir.
			if err := os.Chown(abs, c.pgUser.uid, c.pgUser.gid); err != nil {
				return fmt.Errorf("chown socket dir: %w", err)
			}
			usable = c.pgUser.canEnter(abs)
		}
	}
	if usable {
		c.socketDir = abs
		return nil
	}
	sum := sha256.Sum256([]byte(c.dataDir))
	short := filepath.Join(os.TempDir(), "hoox-s-"+hex.EncodeToString(sum[:4]))
	if len(socketPath(short, c.port)) > maxSocketPath {
		short = filepath.Join("/tmp", filepath.Base(short))
	}
	if err := c.makePrivateDir(short); err != nil {
		return err
	}
	c.logger.Info("using a short socket dir", slog.String("requested", abs), slog.String("socket_dir", short))
	c.socketDir, c.ownSocket = short, true
	return nil
}

// makePrivateDir creates a 0700 dir for the server, refusing one that some
// other user planted in the shared temp dir (it could read the socket).
func (c *Cluster) makePrivateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create socket dir: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("socket dir: %w", err)
	}
	owner := -1
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		owner = int(st.Uid)
	}
	want := os.Geteuid()
	if c.pgUser != nil {
		want = c.pgUser.uid
		if fi.IsDir() && owner == 0 {
			// Ours, just made: hand it to the server, which creates the socket.
			if err := os.Lchown(dir, c.pgUser.uid, c.pgUser.gid); err != nil {
				return fmt.Errorf("chown socket dir: %w", err)
			}
			owner = want
		}
	}
	if !fi.IsDir() || owner != want {
		return fmt.Errorf("socket dir %s exists and is not a directory owned by uid %d", dir, want)
	}
	return nil
}

func socketPath(dir string, port int) string {
	return filepath.Join(dir, ".s.PGSQL."+strconv.Itoa(port))
}

// URL returns a connection string for dbname over the unix socket, as the
// superuser postgres (the cluster trusts local connections).
func (c *Cluster) URL(dbname string) string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=%s sslmode=disable",
		quoteConnValue(c.socketDir), c.port, quoteConnValue(dbname))
}

// DataDir returns the directory the server keeps its files in; it differs
// from Config.DataDir when that was a symlink or had to be moved.
func (c *Cluster) DataDir() string { return c.dataDir }

// SocketDir returns the directory holding the unix socket.
func (c *Cluster) SocketDir() string { return c.socketDir }

// Port returns the port that names the socket.
func (c *Cluster) Port() int { return c.port }

// LogFile returns the server's log file.
func (c *Cluster) LogFile() string { return c.logFile }

// quoteConnValue quotes a keyword/value connection string value when it
// holds characters that would otherwise end it.
func quoteConnValue(v string) string {
	if v != "" && !strings.ContainsAny(v, ` '\`) {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// Start starts a cluster that Stop stopped, such as a test checking how
// hoox behaves while the database is down. It is a no-op when running.
func (c *Cluster) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lock != nil {
		return nil
	}
	lock, err := acquireLock(c.lockPath)
	if err != nil {
		return err
	}
	if err := c.start(ctx); err != nil {
		_ = lock.Close()
		return err
	}
	c.lock = lock
	return nil
}

func (c *Cluster) start(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(c.dataDir, "PG_VERSION")); errors.Is(err, fs.ErrNotExist) {
		if err := c.initdb(ctx); err != nil {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if err := c.recover(ctx); err != nil {
		return err
	}
	if err := c.prepareLogFile(); err != nil {
		return err
	}
	opts := []string{
		"-k", shellQuote(c.socketDir),
		"-p", strconv.Itoa(c.port),
		"-c", "listen_addresses=''",
		// Trust auth is only safe while nobody else can reach the socket.
		"-c", "unix_socket_permissions=0700",
		"-c", "max_connections=200",
	}
	if c.fast {
		opts = append(opts, "-c", "fsync=off", "-c", "full_page_writes=off")
	}
	for _, kv := range c.settings {
		opts = append(opts, "-c", shellQuote(kv))
	}
	for attempt := 1; ; attempt++ {
		out, err := c.command(ctx, "pg_ctl", "start", "-w", "-t", "60", "-s",
			"-D", c.dataDir, "-l", c.logFile, "-o", strings.Join(opts, " ")).CombinedOutput()
		if err == nil {
			break
		}
		log := tail(c.logFile)
		// After a kill -9 of the postmaster its children notice within
		// moments and exit; until then they hold the old shared memory and
		// Postgres refuses to start. Worth waiting for, not failing on.
		if attempt < 20 && strings.Contains(log, "pre-existing shared memory block") {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(250 * time.Millisecond):
				continue
			}
		}
		return fmt.Errorf("pg_ctl start: %w: %s\nserver log (%s):\n%s", err, strings.TrimSpace(string(out)), c.logFile, log)
	}
	c.logger.InfoContext(ctx, "postgres started", slog.String("data_dir", c.dataDir), slog.String("socket_dir", c.socketDir), slog.Int("port", c.port))
	return nil
}

// initdb initialises into a sibling dir and renames it into place, so an
// initdb killed halfway never leaves a data dir that looks initialised.
func (c *Cluster) initdb(ctx context.Context) error {
	tmp := c.dataDir + ".initdb"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("remove leftover %s: %w", tmp, err)
	}
	if err := os.MkdirAll(filepath.Dir(tmp), 0o755); err != nil {
		return fmt.Errorf("create parent of data dir: %w", err)
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	if c.pgUser != nil {
		if err := os.Chown(tmp, c.pgUser.uid, c.pgUser.gid); err != nil {
			return fmt.Errorf("chown data dir: %w", err)
		}
	}
	c.logger.InfoContext(ctx, "initialising postgres data dir", slog.String("data_dir", c.dataDir))
	out, err := c.command(ctx, "initdb", "--no-sync", "-U", "postgres", "--auth=trust",
		"-E", "UTF8", "--locale=C", "-D", tmp).CombinedOutput()
	if err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("initdb: %w: %s", err, strings.TrimSpace(string(out)))
	}
	if err := os.Rename(tmp, c.dataDir); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("data dir %s exists, is not empty and holds no PostgreSQL cluster: %w", c.dataDir, err)
	}
	return nil
}

// recover deals with what a dead owner left behind. We hold the lock, so no
// live hoox owns this cluster: a running postmaster is an orphan, and a
// postmaster.pid naming a process that is not a postgres is stale (Postgres
// itself only recognises a dead pid, not one that was reused).
func (c *Cluster) recover(ctx context.Context) error {
	pm, ok := readPostmasterPID(c.dataDir)
	if !ok {
		return nil
	}
	if isPostgres(pm.pid) {
		c.logger.WarnContext(ctx, "stopping postgres left running by a previous owner that died", slog.Int("pid", pm.pid), slog.String("data_dir", c.dataDir))
		if err := c.stopServer(ctx, "fast"); err != nil {
			if err := c.stopServer(ctx, "immediate"); err != nil {
				return fmt.Errorf("stop orphaned postgres (pid %d): %w", pm.pid, err)
			}
		}
		return nil
	}
	c.logger.InfoContext(ctx, "removing stale postmaster.pid", slog.Int("pid", pm.pid))
	if err := os.Remove(filepath.Join(c.dataDir, "postmaster.pid")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale postmaster.pid: %w", err)
	}
	// The socket lock names the same dead pid and would block the start too.
	if pm.socketDir != "" && pm.port > 0 {
		_ = os.Remove(socketPath(pm.socketDir, pm.port) + ".lock")
	}
	return nil
}

// prepareLogFile creates the log file as root so that a path only root may
// create still works, and hands it to the postgres user who appends to it.
func (c *Cluster) prepareLogFile() error {
	if err := os.MkdirAll(filepath.Dir(c.logFile), 0o755); err != nil {
		return fmt.Errorf("create log dir: %w", err)
	}
	f, err := os.OpenFile(c.logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open log file: %w", err)
	}
	_ = f.Close()
	if c.pgUser != nil {
		if err := os.Chown(c.logFile, c.pgUser.uid, c.pgUser.gid); err != nil {
			return fmt.Errorf("chown log file: %w", err)
		}
	}
	return nil
}

// Stop stops the server (fast shutdown: sessions are disconnected, committed
// work is kept) and releases the data dir. Stopping a stopped cluster is a
// no-op.
func (c *Cluster) Stop(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lock == nil {
		return nil
	}
	if err := c.stopServer(ctx, "fast"); err != nil {
		if pm, ok := readPostmasterPID(c.dataDir); ok && isPostgres(pm.pid) {
			return err
		}
		// The server was already gone (killed from outside): nothing to stop.
	}
	c.logger.InfoContext(ctx, "postgres stopped", slog.String("data_dir", c.dataDir))
	err := c.lock.Close()
	c.lock = nil
	if err != nil {
		return fmt.Errorf("release lock: %w", err)
	}
	return nil
}

// Crash stops the server the way a power cut would for Postgres itself
// (pg_ctl stop -m immediate: no checkpoint, WAL not yet written is lost,
// the next start replays the log). Fault tests use it; Start recovers.
func (c *Cluster) Crash(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lock == nil {
		return nil
	}
	if err := c.stopServer(ctx, "immediate"); err != nil {
		return err
	}
	c.logger.WarnContext(ctx, "postgres crashed on purpose (immediate stop)", slog.String("data_dir", c.dataDir))
	err := c.lock.Close()
	c.lock = nil
	if err != nil {
		return fmt.Errorf("release lock: %w", err)
	}
	return nil
}

func (c *Cluster) stopServer(ctx context.Context, mode string) error {
	out, err := c.command(ctx, "pg_ctl", "stop", "-w", "-t", "60", "-s", "-m", mode, "-D", c.dataDir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl stop -m %s: %w: %s", mode, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Remove stops the server and deletes everything the cluster created: for
// throwaway clusters only.
func (c *Cluster) Remove(ctx context.Context) error {
	if err := c.Stop(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, p := range []string{c.dataDir, c.dataDir + ".initdb", c.linkDir, c.lockPath} {
		if p != "" {
			errs = append(errs, os.RemoveAll(p))
		}
	}
	if c.linkDir != "" {
		_ = os.Remove(fallbackRoot) // only when no other cluster lives there
	}
	if c.ownSocket {
		errs = append(errs, os.RemoveAll(c.socketDir))
	}
	if !strings.HasPrefix(c.logFile, c.dataDir+string(filepath.Separator)) {
		errs = append(errs, os.Remove(c.logFile))
	}
	if err := errors.Join(errs...); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove cluster: %w", err)
	}
	return nil
}

// command runs a server binary, as the postgres user when we are root
// (initdb and postgres refuse to run as root). It runs from / because the
// caller's working dir may be one the postgres user cannot enter.
func (c *Cluster) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	bin := filepath.Join(c.binDir, name)
	var cmd *exec.Cmd
	if c.pgUser != nil {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", c.pgUser.name, "--", bin}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, bin, args...)
	}
	cmd.Dir = "/"
	// pg_ctl's server inherits no pipe of ours (its output goes to the log),
	// but never let a stray holder hang us.
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// shellQuote quotes for the /bin/sh command line pg_ctl builds from -o.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// tail returns the end of a log file for error messages.
func tail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	defer f.Close()
	const n = 2048
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		_, _ = f.Seek(-n, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return strings.TrimSpace(string(b))
}

// Destroy deletes the cluster described by cfg without starting it: the
// test harness uses it to sweep clusters that an interrupted test run left
// behind. A server still running there is stopped first. It returns an
// error wrapping ErrAlreadyRunning when a live process owns the cluster.
func Destroy(ctx context.Context, cfg Config) error {
	c, err := newCluster(cfg)
	if err != nil {
		return err
	}
	lock, err := acquireLock(c.lockPath)
	if err != nil {
		return err
	}
	if _, statErr := os.Stat(filepath.Join(c.dataDir, "PG_VERSION")); statErr == nil {
		err = c.recover(ctx)
	}
	_ = lock.Close()
	if err != nil {
		return err
	}
	return c.Remove(ctx)
}

// EnsureDatabase creates dbname on the server at adminURL unless it exists.
func EnsureDatabase(ctx context.Context, adminURL, dbname string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect to embedded postgres: %w", err)
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", dbname).Scan(&exists); err != nil {
		return fmt.Errorf("look up database %s: %w", dbname, err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{dbname}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", dbname, err)
	}
	return nil
}
