package binance_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
)

// binance.New refuses a base URL it cannot use — one that does not parse
// (a proxy password holding a character a URL's user information may not
// carry unencoded: '^', '#', '[', a space, common in generated passwords)
// or whose scheme is mistyped — and the refusal, hoox's start-up error
// ("HOOX_BINANCE: binance: base url …"), quotes the URL as given, the
// proxy's password included, while exchange.RedactURL (the venues page,
// the logged config, venuekit.Settings.Check's "base url … is not
// http(s)" for the other venues) hides it.
func TestBinanceConfigErrorHidesTheBaseURLsPassword(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ base, password string }{
		"unparsable password": {"https://proxyuser:S3cret^Pass@proxy.example/binance", "S3cret^Pass"},
		"mistyped scheme":     {"htps://proxyuser:pr0xy-pass@proxy.example/binance", "pr0xy-pass"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.NotContains(t, exchange.RedactURL(c.base), c.password, "the venues page hides it")
			_, err := binance.New(binance.Config{Market: binance.MarketSpot, APIKey: "key-0123456789", APISecret: "secret-0123456789", BaseURL: c.base})
			require.Error(t, err, "the base URL is refused at start")
			require.NotContains(t, err.Error(), c.password, "the configuration error carries the proxy password: %s", err)
		})
	}
}
