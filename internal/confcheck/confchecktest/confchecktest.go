// Package confchecktest holds the check every package's config tests make
// of a Validate result, so the tables stay the only thing each writes.
package confchecktest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/confcheck"
)

// RequireRefusal checks what a Validate returned: with field "" it must be
// nil; otherwise it must refuse exactly one setting, config's field, with a
// rule that contains says.
func RequireRefusal(t testing.TB, err error, config, field, says string) {
	t.Helper()
	if field == "" {
		require.NoError(t, err)
		return
	}
	errs := confcheck.All(err)
	require.Len(t, errs, 1, "%v", err)
	require.Equal(t, config, errs[0].Config)
	require.Equal(t, field, errs[0].Field)
	require.Contains(t, errs[0].Rule, says)
}
