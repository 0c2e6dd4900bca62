package bybit_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/bybit"
)

// The README's error-class table must say what the code does.
func TestReadmeErrorTableMatchesCode(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/venues/bybit.md")
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
	table := bybit.ErrorTable()
	for _, r := range table {
		code := fmt.Sprint(r.Code)
		require.Contains(t, rows, code, "retCode %d is missing from the README table", r.Code)
		require.Equal(t, string(r.Class), rows[code], "retCode %d", r.Code)
	}
	require.Len(t, rows, len(table), "the README lists a code the table does not")
}
