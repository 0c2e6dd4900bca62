package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/testutil"
)

// curlBody is the JSON a banner's curl example sends.
var curlBody = regexp.MustCompile(`-d '(\{.*\})'`)

// `hoox dev --fake-venue binance` starts the Binance fake in-process, points
// the binance venue at it, and prints a curl example that really trades on
// it through the real adapter.
func TestDevFakeVenueTradesThroughTheRealAdapter(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hoox dev with its embedded Postgres")
	}
	dir := t.TempDir()
	// As root the embedded cluster runs as the postgres user, who must be
	// able to reach the data dir.
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))

	cmd := exec.Command(binary(t), "dev", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, ".hoox"), "--fake-venue", "binance")
	cmd.Env = append(os.Environ(), "DATABASE_URL=", "HOOX_WEBHOOK_SECRET=", "HOOX_ADMIN_TOKEN=",
		"HOOX_BINANCE_API_KEY=", "HOOX_BINANCE_API_SECRET=", "HOOX_BINANCE_BASE_URL=")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr testutil.LogBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	var url, example string
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if m := bannerURL.FindStringSubmatch(line); m != nil {
				url = m[1]
			}
			if m := curlBody.FindStringSubmatch(line); m != nil && bytes.Contains([]byte(m[1]), []byte(`"exchange":"binance"`)) {
				example = m[1]
				close(ready)
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGINT); <-waitOr(exited) })
	select {
	case <-ready:
	case err := <-exited:
		exited <- err
		t.Fatalf("hoox dev exited: %v\n%s", err, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("hoox dev printed no curl example for the binance fake\n%s", stderr.String())
	}
	require.NotEmpty(t, url)

	r := apptest.Post(t, url, example)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.Equal(t, "binance", r.Str("order", "exchange"))
	require.Equal(t, "filled", r.Str("order", "status"))
	require.NotEmpty(t, r.Str("order", "exchange_order_id"), "the fake venue numbered the order")
	again := apptest.Post(t, url, example)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.NoError(t, <-waitOr(exited), stderr.String())
}

// An unknown name, or a fake asked for a venue that has real credentials,
// is refused before anything starts.
func TestDevFakeVenueRefusesUnknownNamesAndConfiguredVenues(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := map[string]string{"HOOX_BYBIT_API_KEY": "real-key", "HOOX_BYBIT_API_SECRET": "real-secret"}
	getenv := func(k string) string { return env[k] }
	dev := func(list string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return run(ctx, []string{"dev", "--data", filepath.Join(dir, "never"), "--fake-venue", list}, getenv, io.Discard, io.Discard)
	}
	err := dev("kraken")
	require.ErrorContains(t, err, `"kraken"`)
	require.ErrorContains(t, err, "binance, binance-futures, bybit, bybit-spot")
	err = dev("binance,bybit")
	require.ErrorContains(t, err, "HOOX_BYBIT_")
	require.NotContains(t, err.Error(), "real-secret")
	_, statErr := os.Stat(filepath.Join(dir, "never"))
	require.True(t, errors.Is(statErr, os.ErrNotExist), "nothing started, nothing written")
}
