package okx_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/okx"
)

// docs/venues/okx.md's error table must say what the code does.
func TestDocErrorTableMatchesCode(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/venues/okx.md")
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
	table := okx.ErrorTable()
	for _, r := range table {
		code := fmt.Sprint(r.Code)
		require.Contains(t, rows, code, "code %d is missing from the doc's table", r.Code)
		require.Equal(t, string(r.Class), rows[code], "code %d", r.Code)
	}
	require.Len(t, rows, len(table), "the doc lists a code the table does not")
}
