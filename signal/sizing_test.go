package signal

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const sizingBase = `"exchange":"paper","symbol":"BTCUSDT","timestamp":1714564800000`

func TestQuantityType(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body, qtyType, qty, action string
	}{
		{"default is base", `"action":"buy","quantity":"0.5"`, QuantityBase, "0.5", "buy"},
		{"quote", `"action":"buy","quantity":"100","quantity_type":"quote"`, QuantityQuote, "100", "buy"},
		{"TradersPost fixed_quantity", `"action":"buy","quantity":"2","quantityType":"fixed_quantity"`, QuantityBase, "2", "buy"},
		{"TradersPost alias", `"action":"buy","quantity":"100","quantityType":"QUOTE"`, QuantityQuote, "100", "buy"},
		{"percent of balance", `"action":"buy","quantity":25,"quantity_type":"percent_of_balance"`, QuantityPercentOfBalance, "25", "buy"},
		{"Alertatron percent on an entry", `"action":"long","quantity":"50%"`, QuantityPercentOfBalance, "50", "long"},
		{"Alertatron percent on a close", `"action":"close","quantity":"50%"`, QuantityPercentOfPosition, "50", "close"},
		{"percent of position", `"action":"close_long","quantity":"100","quantity_type":"percent_of_position"`, QuantityPercentOfPosition, "100", "close_long"},
		{"percent string with an explicit type", `"action":"close","quantity":"12.5%","quantity_type":"percent_of_position"`, QuantityPercentOfPosition, "12.5", "close"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := mustSignal(t, `{`+sizingBase+`,`+c.body+`}`)
			require.Equal(t, c.qtyType, s.QuantityType)
			require.Equal(t, c.qty, s.Quantity.String())
			require.Equal(t, c.action, s.Action)
		})
	}
}

func TestQuantityTypeInvalid(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, body, field string }{
		{"unknown type", `"action":"buy","quantity":"1","quantity_type":"lots"`, FieldQuantityType},
		{"TradersPost dollar_amount is not guessed", `"action":"buy","quantity":"1","quantityType":"dollar_amount"`, FieldQuantityType},
		{"TradersPost percent_of_equity is not guessed", `"action":"buy","quantity":"1","quantityType":"percent_of_equity"`, FieldQuantityType},
		{"percent above 100", `"action":"buy","quantity":"150%"`, FieldQuantity},
		{"percent of 0", `"action":"buy","quantity":"0%"`, FieldQuantity},
		{"negative percent", `"action":"buy","quantity":"-5%"`, FieldQuantity},
		{"typed percent above 100", `"action":"buy","quantity":"101","quantity_type":"percent_of_balance"`, FieldQuantity},
		{"percent string for a base type", `"action":"buy","quantity":"50%","quantity_type":"base"`, FieldQuantity},
		{"percent of position on an entry", `"action":"buy","quantity":"50","quantity_type":"percent_of_position"`, FieldQuantityType},
		{"percent of balance on a close", `"action":"close","quantity":"50","quantity_type":"percent_of_balance"`, FieldQuantityType},
		{"quote on a close", `"action":"close","quantity":"50","quantity_type":"quote"`, FieldQuantityType},
		{"aliases disagree", `"action":"buy","quantity":"5","quantity_type":"quote","quantityType":"base"`, FieldQuantityType},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.field, signalError(t, `{`+sizingBase+`,`+c.body+`}`).Field)
		})
	}
}

// The fingerprint is over what was asked (the percentage and its type),
// never over a size the venue resolves later; a base signal's canonical
// form is what it was before quantity types existed.
func TestQuantityTypeFingerprint(t *testing.T) {
	t.Parallel()
	base := mustSignal(t, `{`+sizingBase+`,"action":"buy","quantity":"50"}`)
	require.NotContains(t, string(base.Canonical()), "quantity_type")
	require.Equal(t, base.Fingerprint(), mustSignal(t, `{`+sizingBase+`,"action":"buy","quantity":"50","quantity_type":"base"}`).Fingerprint())

	pct := mustSignal(t, `{`+sizingBase+`,"action":"buy","quantity":"50%"}`)
	require.NotEqual(t, base.Fingerprint(), pct.Fingerprint())
	require.Equal(t, pct.Fingerprint(), mustSignal(t, `{`+sizingBase+`,"action":"buy","quantity":50,"quantityType":"percent_of_balance"}`).Fingerprint())
	quote := mustSignal(t, `{`+sizingBase+`,"action":"buy","quantity":"50","quantity_type":"quote"}`)
	require.NotEqual(t, base.Fingerprint(), quote.Fingerprint())
	require.NotEqual(t, pct.Fingerprint(), quote.Fingerprint())

	// Canonical is itself a body that decodes to the same signal.
	again := mustSignal(t, string(pct.Canonical()))
	require.Equal(t, pct.Fingerprint(), again.Fingerprint())
}

func TestSentimentFlatCloses(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`"sentiment":"flat","quantity":"1"`,
		`"sentiment":"FLAT","action":"sell","quantity":"1"`,
		`"market_position":"flat","action":"buy","quantity":"1"`,
	} {
		s := mustSignal(t, `{`+sizingBase+`,`+body+`}`)
		require.Equal(t, "close", s.Action, body)
		require.True(t, s.ReduceOnly, body)
		require.Empty(t, s.Side, body)
	}
	// The same close, said either way, is one signal.
	require.Equal(t,
		mustSignal(t, `{`+sizingBase+`,"market_position":"flat","action":"sell","quantity":"1"}`).Fingerprint(),
		mustSignal(t, `{`+sizingBase+`,"action":"close","quantity":"1"}`).Fingerprint())

	// A sentiment the action already says changes nothing; an unknown one
	// is refused.
	s := mustSignal(t, `{`+sizingBase+`,"sentiment":"bullish","action":"buy","quantity":"1"}`)
	require.Equal(t, "buy", s.Action)
	require.Equal(t, FieldSentiment, signalError(t, `{`+sizingBase+`,"sentiment":"sideways","action":"buy","quantity":"1"}`).Field)
	require.Equal(t, FieldAction, signalError(t, `{`+sizingBase+`,"sentiment":"long","quantity":"1"}`).Field)
}

// A template that sends "quantity": "25%" with every order (the README's
// sizing template) and "market_position": "{{strategy.market_position}}":
// its exit renders sell, flat, "25%". The strategy is flat, so nothing is
// meant to stay open: a whole close, not a close of 25 % of the position.
func TestFlatExitOfAPercentSizedTemplateClosesEverything(t *testing.T) {
	t.Parallel()
	s := mustSignal(t, `{"exchange":"binance-futures","symbol":"BTCUSDT.P","action":"sell","market_position":"flat","quantity":"25%","leverage":3,"timestamp":"2024-05-01T12:00:00Z"}`)
	require.Equal(t, "close", s.Action)
	require.True(t, s.ReduceOnly)
	require.Equal(t, QuantityBase, s.QuantityType,
		"a flat strategy's exit is a whole close; got %s of %s", s.QuantityType, s.Quantity)

	// Whatever else the template sizes its entries by.
	for _, body := range []string{
		`"action":"sell","sentiment":"flat","quantity":"25","quantity_type":"percent_of_balance"`,
		`"action":"buy","sentiment":"flat","quantity":"100","quantity_type":"quote"`,
		`"action":"sell","sentiment":"flat","quantity":"25%","quantity_type":"base"`,
	} {
		s := mustSignal(t, `{`+sizingBase+`,`+body+`}`)
		require.Equal(t, "close", s.Action, body)
		require.Equal(t, QuantityBase, s.QuantityType, body)
	}
	// A share asked for by name stays a share.
	s = mustSignal(t, `{`+sizingBase+`,"sentiment":"flat","quantity":"50","quantity_type":"percent_of_position"}`)
	require.Equal(t, "close", s.Action)
	require.Equal(t, QuantityPercentOfPosition, s.QuantityType)
}

// The strategy's position once the order filled (market_position) says
// what a sell or buy is: a sell leaving it short opens a short (which a
// spot venue refuses instead of selling the coins held); a sell leaving it
// long, or a buy leaving it short, is a partial exit, which a percentage
// sizes as a share of the position — reduce-only, so it never opens the
// other side.
func TestSentimentSaysWhatASellOrBuyIs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body, action, qtyType string
		reduceOnly                  bool
	}{
		{"short entry", `"action":"sell","market_position":"short","quantity":"1"`, "short", QuantityBase, false},
		{"TradersPost bearish sell", `"action":"sell","sentiment":"bearish","quantity":"1"`, "short", QuantityBase, false},
		{"short entry by balance", `"action":"sell","market_position":"short","quantity":"25%"`, "short", QuantityPercentOfBalance, false},
		{"long entry", `"action":"buy","market_position":"long","quantity":"25%"`, "buy", QuantityPercentOfBalance, false},
		{"partial exit of a long by percent", `"action":"sell","market_position":"long","quantity":"25%"`, "close_long", QuantityPercentOfPosition, true},
		{"partial exit of a long by typed percent", `"action":"sell","market_position":"long","quantity":"25","quantity_type":"percent_of_position"`, "close_long", QuantityPercentOfPosition, true},
		{"partial exit of a short by percent", `"action":"buy","market_position":"short","quantity":"25%"`, "close_short", QuantityPercentOfPosition, true},
		{"partial exit in the strategy's contracts", `"action":"sell","market_position":"long","quantity":"0.5"`, "sell", QuantityBase, false},
		{"no sentiment", `"action":"sell","quantity":"25%"`, "sell", QuantityPercentOfBalance, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := mustSignal(t, `{`+sizingBase+`,`+c.body+`}`)
			require.Equal(t, c.action, s.Action)
			require.Equal(t, c.qtyType, s.QuantityType)
			require.Equal(t, c.reduceOnly, s.ReduceOnly)
		})
	}
	// A share of the balance named as such could take more than the long
	// and open a short: refused, not guessed.
	e := signalError(t, `{`+sizingBase+`,"action":"sell","market_position":"long","quantity":"25","quantity_type":"percent_of_balance"}`)
	require.Equal(t, FieldQuantityType, e.Field)
	require.Contains(t, e.Msg, "reduces its position")
}

// Reading the strategy's position (market_position, sentiment) changes
// what some bodies do — a sell leaving the strategy short is the action
// short, a percent-sized partial exit closes a share of the position, a
// flat exit closes all of it — but the canonical signal keeps the action
// and quantity type as releases before that reading derived them, plus
// the position as sent (TestOrdersLeavingTheStrategyInOtherPositionsAreTwoSignals):
// the canonical form is an earlier release's with the sentiment key added
// (none for flat, which the action close says).
func TestPositionReadingKeepsTheAskedActionInTheCanonicalForm(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, body, before, sentiment, action, qtype string }{
		// before: what an earlier release read the body as (the same body
		// without the position, or with the action it derived for flat).
		{"sell leaving a short", `"action":"sell","market_position":"short","quantity":"1"`,
			`"action":"sell","quantity":"1"`, "short", "short", QuantityBase},
		{"percent exit leaving a long", `"action":"sell","market_position":"long","quantity":"25%"`,
			`"action":"sell","quantity":"25%"`, "long", "close_long", QuantityPercentOfPosition},
		{"percent exit leaving a short", `"action":"buy","sentiment":"bearish","quantity":"25%"`,
			`"action":"buy","quantity":"25%"`, "short", "close_short", QuantityPercentOfPosition},
		{"flat exit sized 25%", `"action":"sell","market_position":"flat","quantity":"25%"`,
			`"action":"close","quantity":"25%"`, "", "close", QuantityBase},
		{"flat limit exit sized 25%", `"action":"sell","market_position":"flat","quantity":"25%","price":"110"`,
			`"action":"close","quantity":"25%","price":"110"`, "", "close", QuantityPercentOfPosition},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := mustSignal(t, `{`+sizingBase+`,`+c.body+`}`)
			require.Equal(t, c.action, s.Action, "what the body does now")
			require.Equal(t, c.qtype, s.QuantityType)
			before := mustSignal(t, `{`+sizingBase+`,`+c.before+`}`)
			withoutSentiment := strings.Replace(string(s.Canonical()), `"sentiment":"`+c.sentiment+`",`, "", 1)
			require.Equal(t, string(before.Canonical()), withoutSentiment)
		})
	}
	// A body the position does not change keeps its own canonical form.
	plain := mustSignal(t, `{`+sizingBase+`,"action":"buy","market_position":"long","quantity":"1"}`)
	require.Contains(t, string(plain.Canonical()), `"action":"buy","sentiment":"long"`)
}
