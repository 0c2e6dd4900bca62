package app_test

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/internal/app"
	"github.com/hoox/hoox/internal/apptest"
)

// readmeTemplate returns the README's TradingView alert message that
// starts at the first line holding every one of marks (a one-line
// template) or, for the "TradingView alert message" section, the whole
// ```json block that follows it.
func readmeTemplate(t *testing.T, marks ...string) string {
	t.Helper()
	raw, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	readme := string(raw)
	if len(marks) == 1 && strings.HasPrefix(marks[0], "### ") {
		i := strings.Index(readme, marks[0])
		require.GreaterOrEqual(t, i, 0, "README lacks %q", marks[0])
		rest := readme[i:]
		start := strings.Index(rest, "```json\n")
		require.GreaterOrEqual(t, start, 0)
		rest = rest[start+len("```json\n"):]
		end := strings.Index(rest, "```")
		require.GreaterOrEqual(t, end, 0)
		return rest[:end]
	}
	for _, line := range strings.Split(readme, "\n") {
		all := true
		for _, m := range marks {
			all = all && strings.Contains(line, m)
		}
		if all {
			return line
		}
	}
	t.Fatalf("README has no template line holding %q", marks)
	return ""
}

// render fills a template's placeholders as TradingView does when the
// alert fires (renderAlert), and points it at paper.
func render(tmpl string, values map[string]string) string {
	out := renderAlert(tmpl, values)
	for _, venue := range []string{`"binance-futures"`, `"binance"`, `"bybit"`, `"okx-swap"`} {
		out = strings.ReplaceAll(out, `"exchange": `+venue, `"exchange": "paper"`)
	}
	return out
}

// renderAlert fills a template's placeholders as TradingView does when
// the alert fires, with the test's hoox secret.
func renderAlert(tmpl string, values map[string]string) string {
	out := strings.ReplaceAll(tmpl, "YOUR_WEBHOOK_SECRET", apptest.Secret)
	for k, v := range values {
		out = strings.ReplaceAll(out, "{{"+k+"}}", v)
	}
	return out
}

// The README's sizing template (issue 19, "TradingView templates (one alert
// each)"): entries put 25 % of the balance in, and "closes the whole
// position when the strategy goes flat". The exit TradingView renders from
// it is {"action": "sell", "market_position": "flat", "quantity": "25%"}:
// flat makes it a close of the whole position, whatever the quantity says
// (it was percent_of_position: a quarter sold, three quarters left open
// while the strategy is flat).
func TestReadmeFlatTemplateClosesTheWholePosition(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t)
	const symbol = "FLATUSDT"

	// The position the strategy built (paper refuses percent_of_balance:
	// it keeps no balance, so the entries are sent as base quantities).
	entry := fmt.Sprintf(`{"secret":%q,"exchange":"paper","symbol":%q,"action":"buy","quantity":"4","trace_id":"flat-entry"}`, apptest.Secret, symbol)
	r := apptest.Post(t, b.URL, entry)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)

	tmpl := readmeTemplate(t, `"quantity": "25%"`, `"market_position": "{{strategy.market_position}}"`)
	exit := render(tmpl, map[string]string{
		"ticker":                   symbol,
		"strategy.order.action":    "sell",
		"strategy.market_position": "flat",
		"strategy.order.contracts": "4",
		"timenow":                  time.Now().UTC().Format(time.RFC3339),
	})
	r = apptest.Post(t, b.URL, exit)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.Equal(t, "sell", r.Str("order", "side"))
	require.Equal(t, "4", r.Str("order", "quantity"),
		"the strategy went flat, and the README says this template then closes the whole position; hoox sold %s of 4 (body %s)",
		r.Str("order", "quantity"), exit)
}

// The README's first TradingView template keys each alert on its content
// and {{timenow}}, so that TradingView's retries of one alert are
// duplicates while two different orders are not. {{timenow}} is the
// fire time to the second (TradingView's "How to use a variable value in
// alert": "Returns time to the nearest second, regardless of the
// resolution"), and a strategy alert fires once per order fill: two
// entries filled on one bar (pyramiding "L1" and "L2", or a close and the
// reversing entry) fire in the same second, and nothing in the template
// tells them apart but the order's ID, which the template carries in
// comment (part of the trace). Without it hoox derived one trace for both:
// the second order was answered 409 duplicate and never placed.
func TestReadmeTemplateTwoOrdersOnOneBarAreTwoOrders(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t)
	tmpl := readmeTemplate(t, "### TradingView alert message")
	fired := time.Now().UTC().Format(time.RFC3339)
	for _, id := range []string{"L1", "L2"} {
		body := render(tmpl, map[string]string{
			"ticker":                   "BTCUSDT",
			"strategy.order.action":    "buy",
			"strategy.order.contracts": "1",
			"strategy.order.id":        id,
			"strategy.order.comment":   id,
			"strategy.market_position": "long",
			"timenow":                  fired,
		})
		r := apptest.Post(t, b.URL, body)
		require.Equal(t, http.StatusOK, r.Status, "order %s of the bar: %s", id, r.Raw)
	}
	require.Equal(t, 2, apptest.Count(t, b.Pool, `SELECT count(*) FROM orders WHERE symbol = 'BTCUSDT'`),
		"two pyramided entries filled on one bar are two orders")
}

// The README's spot template ("Give each strategy its own strategy name …
// a TradingView template for a spot strategy") carries
// {{strategy.market_position}}. When the strategy opens a short (a
// TradingView strategy trades both directions unless told otherwise), the
// alert renders {"action": "sell", "market_position": "short"}: hoox knows
// the strategy is opening a short, which spot cannot do, and that a
// `short` is refused on spot because "a sell would instead sell the base
// asset the account holds — a trade the strategy never asked for"
// (docs/venues/binance.md): the sell is the action short, refused on spot
// (it sold the account's ETH while sentiment short "changed nothing").
func TestReadmeSpotTemplateShortEntrySellsNothingHeld(t *testing.T) {
	t.Parallel()
	fake := binancefake.New(t, binancefake.Options{})
	b := apptest.Setup(t, func(c *app.Config) {
		*c.Venue("binance") = app.VenueSettings{APIKey: fake.APIKey(), APISecret: fake.APISecret(), BaseURL: fake.URL}
	})
	// Coins the account holds for other reasons (no strategy bought them).
	fake.SetBalance("ETH", decimal.NewFromInt(5))

	tmpl := readmeTemplate(t, `"exchange": "binance", "symbol": "{{ticker}}", "action": "{{strategy.order.action}}", "market_position"`)
	body := render(tmpl, map[string]string{
		"ticker":                   "ETHUSDT",
		"strategy.order.action":    "sell",
		"strategy.market_position": "short",
		"strategy.order.contracts": "1",
		"timenow":                  time.Now().UTC().Format(time.RFC3339),
	})
	body = strings.Replace(body, `"exchange": "paper"`, `"exchange": "binance"`, 1)
	r := apptest.Post(t, b.URL, body)
	for _, o := range fake.Orders() {
		require.NotEqual(t, "SELL", o.Side,
			"a spot strategy opening a short must not sell the account's coins (answer %d %s; body %s)", r.Status, r.Raw, body)
	}
	// The answer a `short` gets on spot.
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Raw)
	require.Equal(t, "order_rejected", r.Str("code"))
	require.Contains(t, r.Str("detail"), "short", r.Raw)
	require.Equal(t, "5", fake.Balance("ETH").String())
}
