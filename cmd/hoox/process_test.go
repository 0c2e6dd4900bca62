package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// binDir holds the hoox binary built for this test binary's process tests;
// TestMain removes it.
var binDir = filepath.Join(os.TempDir(), fmt.Sprintf("hoox-bin-%d", os.Getpid()))

// hooxBinary builds the hoox binary once per test run, for tests that need a
// real process to interrupt or kill.
var hooxBinary = sync.OnceValues(func() (string, error) {
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(binDir, "hoox")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", errors.New(string(out))
	}
	return bin, nil
})

func binary(t *testing.T) string {
	t.Helper()
	bin, err := hooxBinary()
	require.NoError(t, err)
	return bin
}

func TestServeWithoutSecretExitsNamingIt(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary(t), "serve")
	cmd.Env = []string{"DATABASE_URL=postgres://nowhere/hoox", "PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.NotEqual(t, 0, exit.ExitCode())
	require.Contains(t, string(out), "HOOX_WEBHOOK_SECRET")
	require.Equal(t, 1, strings.Count(strings.TrimSpace(string(out)), "\n")+1, "one line: %s", out)

	cmd = exec.Command(binary(t), "serve")
	cmd.Env = []string{"HOOX_WEBHOOK_SECRET=s3cret-long-enough", "PATH=" + os.Getenv("PATH")}
	out, err = cmd.CombinedOutput()
	require.ErrorAs(t, err, &exit)
	require.Contains(t, string(out), "DATABASE_URL")
}

func TestHelpListsEverySettingWithItsDefault(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"serve", "--help"}} {
		var out bytes.Buffer
		err := run(context.Background(), args, func(string) string { return "" }, &out, io.Discard)
		require.NoError(t, err)
		require.Equal(t, 1, strings.Count(out.String(), "Settings (environment variable"), "hoox %v prints its settings once", args)
		for _, want := range []string{"DATABASE_URL", "HOOX_WEBHOOK_SECRET", "HOOX_TRACE_TTL", "24h0m0s", "HOOX_MAX_BODY", "64KiB", "HOOX_LOCK_WAIT", "2s", "--no-migrate"} {
			require.Contains(t, out.String(), want, "hoox %v", args)
		}
	}
}

func TestEnvironmentAndFlagsSetConfig(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HOOX_TRACE_TTL": "1h", "HOOX_ADDR": ":9999", "HOOX_MAX_BODY": "1MiB"}
	cfg, _, err := parseConfig("serve", []string{"--addr", ":7777"}, func(k string) string { return env[k] }, io.Discard, nil)
	require.NoError(t, err)
	require.Equal(t, time.Hour, cfg.Timing.TraceTTL)
	require.Equal(t, ":7777", cfg.Addr, "a flag beats the environment")
	require.Equal(t, int64(1<<20), cfg.API.MaxBody)
	require.Equal(t, 60*time.Second, cfg.Gateway.DedupWindow, "unset keeps the default")

	_, _, err = parseConfig("serve", nil, func(k string) string {
		return map[string]string{"HOOX_LOCK_WAIT": "soon"}[k]
	}, io.Discard, nil)
	require.ErrorContains(t, err, "HOOX_LOCK_WAIT")
}

// devProcess is a running `hoox dev`.
type devProcess struct {
	cmd    *exec.Cmd
	url    string
	secret string
	exited chan error
}

var bannerURL = regexp.MustCompile(`hoox dev is running on (http://\S+)`)
var bannerSecret = regexp.MustCompile(`webhook secret: (\S+)`)

func startDev(t *testing.T, dataDir string) (*devProcess, error) {
	t.Helper()
	cmd := exec.Command(binary(t), "dev", "--addr", "127.0.0.1:0", "--data", dataDir)
	cmd.Env = append(os.Environ(), "DATABASE_URL=", "HOOX_WEBHOOK_SECRET=", "HOOX_ADMIN_TOKEN=")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	p := &devProcess{cmd: cmd, exited: make(chan error, 1)}
	found := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if m := bannerSecret.FindStringSubmatch(line); m != nil {
				p.secret = m[1]
				close(found)
			}
			if m := bannerURL.FindStringSubmatch(line); m != nil {
				p.url = m[1]
			}
		}
		p.exited <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGINT); <-waitOr(p.exited) })
	select {
	case <-found:
		return p, nil
	case err := <-p.exited:
		p.exited <- err
		return nil, errors.New(stderr.String())
	case <-time.After(60 * time.Second):
		return nil, errors.New("hoox dev did not start: " + stderr.String())
	}
}

func waitOr(ch chan error) chan error {
	out := make(chan error, 1)
	go func() {
		select {
		case err := <-ch:
			ch <- err
			out <- err
		case <-time.After(30 * time.Second):
			out <- errors.New("timeout")
		}
	}()
	return out
}

func devSignal(p *devProcess) string {
	b, _ := json.Marshal(map[string]any{"secret": p.secret, "exchange": "paper", "symbol": "BTCUSDT",
		"action": "buy", "quantity": "0.01", "trace_id": "dev-restart-1"})
	return string(b)
}

func TestDevKeepsItsDataAcrossRestartsAndRecoversFromKill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// As root the embedded cluster runs as the postgres user, who must be
	// able to reach the data dir.
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	data := filepath.Join(dir, ".hoox")

	first, err := startDev(t, data)
	require.NoError(t, err)
	r := apptest.Post(t, first.url, devSignal(first))
	require.Equal(t, http.StatusOK, r.Status, r.Raw)

	_, err = startDev(t, data)
	require.Error(t, err, "a second hoox dev on the same data dir must refuse")
	require.Contains(t, err.Error(), "already running")

	require.NoError(t, first.cmd.Process.Signal(syscall.SIGINT))
	require.NoError(t, <-waitOr(first.exited))

	second, err := startDev(t, data)
	require.NoError(t, err)
	require.Equal(t, first.secret, second.secret, "the secrets survive a restart")
	r = apptest.Post(t, second.url, devSignal(second))
	require.Equal(t, http.StatusConflict, r.Status, "the trace survives a restart: %s", r.Raw)

	require.NoError(t, second.cmd.Process.Kill())
	<-waitOr(second.exited)

	third, err := startDev(t, data)
	require.NoError(t, err, "hoox dev starts after a kill -9")
	r = apptest.Post(t, third.url, devSignal(third))
	require.Equal(t, http.StatusConflict, r.Status, r.Raw)
	require.NoError(t, third.cmd.Process.Signal(syscall.SIGINT))
	require.NoError(t, <-waitOr(third.exited))
}

func TestMigrateCommand(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	env := func(k string) string {
		if k == "DATABASE_URL" {
			return dbURL
		}
		return ""
	}
	migrate := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		require.NoError(t, run(context.Background(), append([]string{"migrate"}, args...), env, &out, io.Discard))
		return out.String()
	}
	require.NotContains(t, migrate("status"), "Pending")
	require.Contains(t, migrate("down-to-zero"), "rolled back 00001_schema.sql")
	require.NotContains(t, migrate("status"), "Applied")
	require.Contains(t, migrate("up"), "applied 00001_schema.sql")
	require.Equal(t, "schema is current\n", migrate("up"))
	err := run(context.Background(), []string{"migrate", "sideways"}, env, io.Discard, io.Discard)
	require.ErrorContains(t, err, "sideways")
}
