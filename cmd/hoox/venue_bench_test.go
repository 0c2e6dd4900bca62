package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// `hoox bench --venue bybit-fake` times the adapter on its fake next to
// paper and runs the webhook load on both, each checked for exactly-once
// (order rows against the orders the fake holds).
func TestVenueBenchComparesTheAdapterWithPaper(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts an embedded Postgres and runs two loads")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	err := run(ctx, []string{"bench", "--venue", "bybit-fake", "--venue-orders", "30", "--venue-rate", "20", "--duration", "1s"},
		func(string) string { return "" }, &out, io.Discard)
	require.NoError(t, err, out.String())
	report := out.String()
	require.Contains(t, report, "bybit (fake)")
	require.Regexp(t, `(?m)^\s+paper\s+30\s+0\s`, report, "30 paper placements, none rejected")
	require.Regexp(t, `(?m)^\s+bybit \(fake\)\s+30\s+0\s`, report, "30 placements on the fake, none rejected")
	require.Equal(t, 2, strings.Count(report, "exactly-once: OK"), report)
	require.Regexp(t, `order rows [1-9]\d* \(distinct client order ids \d+\), orders at the fake [1-9]`, report, "the venue load reached the fake")

	err = run(ctx, []string{"bench", "--venue", "kraken-fake"}, func(string) string { return "" }, io.Discard, io.Discard)
	require.ErrorContains(t, err, "binance-fake, binance-futures-fake, bybit-fake, bybit-spot-fake")
}
