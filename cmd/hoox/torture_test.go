package main

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTortureRefusesAnUnknownFaultBeforeStartingAnything(t *testing.T) {
	t.Parallel()
	err := run(context.Background(), []string{"torture", "--faults", "kill,meteor"}, func(string) string { return "" }, io.Discard, io.Discard)
	require.ErrorContains(t, err, `unknown fault "meteor"`)
}

func TestTortureHelpNamesItsFlags(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"torture", "--help"}, func(string) string { return "" }, &out, io.Discard))
	for _, want := range []string{"-seed", "-duration", "-time-scale", "-faults", "kill_after_accept"} {
		require.Contains(t, out.String(), want)
	}
	out.Reset()
	require.NoError(t, run(context.Background(), []string{"--help"}, func(string) string { return "" }, &out, io.Discard))
	require.Contains(t, out.String(), "hoox torture")
}
