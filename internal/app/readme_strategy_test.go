package app_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/signal"
)

// documentedAlerts returns every TradingView strategy alert message in
// the README's and the venue guides' ```json blocks (one object a line,
// or a block that is one object): those that carry {{strategy.…}}.
func documentedAlerts(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("../../docs/venues/*.md")
	require.NoError(t, err)
	files = append(files, "../../README.md")
	alerts := map[string][]string{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		blocks := strings.Split(string(raw), "```json\n")
		for _, b := range blocks[1:] {
			block := b[:strings.Index(b, "```")]
			messages := []string{block}
			if strings.HasPrefix(block, `{"`) {
				messages = strings.Split(strings.TrimSpace(block), "\n")
			}
			for _, m := range messages {
				if strings.Contains(m, "{{strategy.") {
					alerts[filepath.Base(f)] = append(alerts[filepath.Base(f)], m)
				}
			}
		}
	}
	require.NotEmpty(t, alerts["README.md"])
	return alerts
}

// Order IDs such as "Long" and "Exit" are common to many scripts: two
// strategies on one account and symbol whose orders of one ID, action and
// contracts fire in the same second differ only by their strategy name.
// Every documented strategy alert carries one, so that a trader who copies
// two of them (and names each strategy) gets two signals.
func TestReadmeStrategyAlertsNameTheirStrategy(t *testing.T) {
	t.Parallel()
	values := map[string]string{
		"ticker": "BTCUSDT", "strategy.order.action": "buy", "strategy.market_position": "long",
		"strategy.order.contracts": "1", "strategy.order.price": "100", "strategy.order.id": "Long",
		"strategy.order.comment": "Long", "timenow": "2024-05-01T12:00:00Z", "close": "100",
		"plot_0": "110", "plot_1": "90",
	}
	for file, alerts := range documentedAlerts(t) {
		for _, a := range alerts {
			raw, err := signal.Decode([]byte(renderAlert(a, values)))
			require.NoError(t, err, "%s: %s", file, a)
			s, err := raw.Signal()
			require.NoError(t, err, "%s: %s", file, a)
			require.NotEmpty(t, s.Strategy, "%s: a strategy alert without a strategy name merges with another strategy's order of the same ID in the same second:\n%s", file, a)
		}
	}
}

// The README's derivatives template, copied for two strategies that
// trade BTCUSDT on one account (each given its own name, as the README
// says): both enter with an order called "Long" of one contract on the
// same bar. Two orders reach the venue; without the strategy in the
// template the second was answered 409 duplicate and never placed.
func TestReadmeDerivativesTemplateForTwoStrategiesPlacesBothOrders(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t)
	tmpl := readmeTemplate(t, `"exchange": "binance-futures"`, `"leverage": 5`)
	require.Contains(t, tmpl, `"my-strategy"`, "the template names the strategy for the trader to replace")
	fired := time.Now().UTC().Format(time.RFC3339)
	for _, name := range []string{"ema-cross", "breakout"} {
		body := render(strings.Replace(tmpl, `"my-strategy"`, `"`+name+`"`, 1), map[string]string{
			"ticker":                   "PERPUSDT",
			"strategy.order.action":    "buy",
			"strategy.order.contracts": "1",
			"strategy.order.id":        "Long",
			"timenow":                  fired,
		})
		body = strings.Replace(body, `"leverage": 5, `, "", 1) // paper takes no leverage
		r := apptest.Post(t, b.URL, body)
		require.Equal(t, http.StatusOK, r.Status, "strategy %s: %s", name, r.Raw)
	}
	require.Equal(t, 2, apptest.Count(t, b.Pool, `SELECT count(*) FROM orders WHERE symbol = 'PERPUSDT'`),
		"two strategies' entries are two orders")
}
