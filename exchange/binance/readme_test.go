package binance_test

import (
	"os"
	"regexp"
	"slices"
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
	{"nothing sent; the service", binance.ClassUnreachable},
	{"nothing sent; requests pause", binance.ClassRateLimited},
	{"nothing sent; server time", binance.ClassTimestamp},
	{"nothing sent; credentials", binance.ClassCredentials},
	{"not found", binance.ClassNotFound},
	{"archived", binance.ClassArchived},
}

var binanceCodeRE = regexp.MustCompile(`-[0-9]{4}`)

// The operator's error-class table must say what the code does: every code
// the adapter classifies is in the row of its class, every message that
// gives a code another class is in that class's row, and the table names
// no code the adapter does not classify that way.
func TestDocErrorTableMatchesCode(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/venues/binance.md")
	require.NoError(t, err)
	documented := map[int][]binance.Class{}
	rows := map[binance.Class]string{}
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
		rows[class] += cells[1]
		if class == "" {
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
	byMessage := map[int][]binance.Class{}
	for _, m := range binance.MessageClasses() {
		require.Contains(t, rows[m.Class], strconv.Itoa(m.Code), "code %d %q is not in its row of the table", m.Code, m.Msg)
		require.Contains(t, rows[m.Class], strings.TrimSuffix(m.Msg, "."), "message %q is not in its row of the table", m.Msg)
		byMessage[m.Code] = append(byMessage[m.Code], m.Class)
	}
	for code, classes := range documented {
		for _, class := range classes {
			if slices.Contains(byMessage[code], class) {
				continue // told apart by its message
			}
			require.Equal(t, table[code], class, "the table lists %d under a class the code does not give it", code)
		}
	}
}

// The codes and messages that say nothing was sent for a reason that is
// not the order's — the clock, the key, the account's permissions, the
// service — are never a refusal for good, which would use the signal up.
func TestNothingSentIsNeverARefusal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status int
		code   int
		msg    string
		want   binance.Class
	}{
		{400, -1021, "Timestamp for this request is outside of the recvWindow.", binance.ClassTimestamp},
		{400, -5028, "Timestamp for this request is outside of the ME recvWindow.", binance.ClassTimestamp},
		{400, -2010, "This account may not place or cancel orders.", binance.ClassCredentials},
		{400, -2010, "Rest API trading is not enabled.", binance.ClassCredentials},
		{400, -2010, "This action is disabled on this account.", binance.ClassCredentials},
		{401, -2015, "Invalid API-key, IP, or permissions for action.", binance.ClassCredentials},
		{401, -2017, "API Keys are locked on this account.", binance.ClassCredentials},
		{403, -1011, "This IP cannot access this route.", binance.ClassCredentials},
		{400, -1016, "This service is no longer available.", binance.ClassUnreachable},
		{400, -2010, "Duplicate order sent.", binance.ClassDuplicate},
		{400, -2010, "Account has insufficient balance for requested action.", binance.ClassRejected},
	} {
		require.Equal(t, c.want, binance.Classify(c.status, c.code, c.msg), "%d %d %q", c.status, c.code, c.msg)
	}
}
