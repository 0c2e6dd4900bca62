package signal

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }

// mustSignal decodes and validates body, failing the test on any error.
func mustSignal(t testing.TB, body string) Signal {
	t.Helper()
	raw, err := Decode([]byte(body))
	require.NoError(t, err)
	s, err := raw.Signal()
	require.NoError(t, err)
	return s
}

// signalError decodes body, which must be valid JSON, and returns the
// validation error.
func signalError(t testing.TB, body string) *Error {
	t.Helper()
	raw, err := Decode([]byte(body))
	require.NoError(t, err)
	_, err = raw.Signal()
	require.Error(t, err)
	var se *Error
	require.ErrorAs(t, err, &se)
	return se
}
