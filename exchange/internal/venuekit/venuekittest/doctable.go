// Package venuekittest holds the test helpers the adapters' tests share.
package venuekittest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/internal/venuekit"
)

// RequireDocTable fails t unless the error table in the markdown file at
// docPath (rows "| code | class | …", the code a number) lists exactly the
// codes of table, each with its class: the operator's doc must say what
// the code does.
func RequireDocTable[R venuekit.Row](t testing.TB, docPath string, rowsOf []R) {
	t.Helper()
	table := venuekit.Rows(rowsOf)
	raw, err := os.ReadFile(docPath)
	require.NoError(t, err)
	rows := map[string]string{}
	for line := range strings.SplitSeq(string(raw), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		code := strings.Trim(strings.TrimSpace(cells[1]), "`")
		if _, err := strconv.Atoi(code); err == nil {
			rows[code] = strings.TrimSpace(cells[2])
		}
	}
	for _, r := range table {
		code := fmt.Sprint(r.Code)
		require.Contains(t, rows, code, "code %d is missing from %s's table", r.Code, docPath)
		require.Equal(t, string(r.Class), rows[code], "code %d", r.Code)
	}
	require.Len(t, rows, len(table), "%s lists a code the table does not", docPath)
}
