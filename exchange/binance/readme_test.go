package binance_test

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance"
)

// docClasses maps the class column of docs/venues/binance.md's error table
// (by its first words) onto the code's classes.
var docClasses = []struct {
	prefix string
	class  binance.Class
}{
	{"refused; cached filters", binance.ClassFilter},
	{"refused for good", binance.ClassRejected},
	{"duplicate", binance.ClassDuplicate},
	{"unknown outcome", binance.ClassUnknown},
	{"nothing sent; requests pause", binance.ClassRateLimited},
	{"nothing sent; server time", binance.ClassTimestamp},
	{"nothing sent; credentials", binance.ClassCredentials},
	{"not found", binance.ClassNotFound},
}

var binanceCodeRE = regexp.MustCompile(`-[0-9]{4}`)

// The operator's error-class table must say what the code does: every code
// the adapter classifies is in the row of its class, and the table names
// no code the adapter does not classify that way.
func TestDocErrorTableMatchesCode(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/venues/binance.md")
	require.NoError(t, err)
	documented := map[int][]binance.Class{}
	for line := range strings.SplitSeq(string(raw), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 {
			continue
		}
		classText := strings.TrimSpace(cells[2])
		var class binance.Class
		for _, c := range docClasses {
			if strings.HasPrefix(classText, c.prefix) {
				class = c.class
			}
		}
		codes := binanceCodeRE.FindAllString(cells[1], -1)
		if class == 0 {
			require.Empty(t, codes, "a row with codes but a class the test does not know: %q", classText)
			continue
		}
		for _, c := range codes {
			n, err := strconv.Atoi(c)
			require.NoError(t, err)
			documented[n] = append(documented[n], class)
		}
	}
	table := binance.ErrorClasses()
	require.NotEmpty(t, documented, "no error table found in docs/venues/binance.md")
	for code, class := range table {
		require.Contains(t, documented[code], class, "code %d (class %d) is not in its row of the table", code, class)
	}
	for code, classes := range documented {
		for _, class := range classes {
			if code == -2010 && class == binance.ClassDuplicate {
				continue // spot's -2010 "Duplicate order sent." is told apart by its message
			}
			require.Equal(t, table[code], class, "the table lists %d under a class the code does not give it", code)
		}
	}
}
