package exchange_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
)

func TestRedactURLHidesUserInformationOnly(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"https://api.binance.com":                  "https://api.binance.com",
		"(production)":                             "(production)",
		"https://user:secret@proxy.example:8443/b": "https://[redacted]@proxy.example:8443/b",
		"https://token@proxy.example":              "https://[redacted]@proxy.example",
		"https://us%zzer:secret@proxy.example/%zz": "https://[redacted]@proxy.example/%zz",
	} {
		require.Equal(t, want, exchange.RedactURL(raw), raw)
	}
	require.Equal(t, "secret", exchange.URLPassword("https://user:secret@proxy.example"))
	require.Equal(t, "token", exchange.URLPassword("https://token@proxy.example"))
	require.Empty(t, exchange.URLPassword("https://proxy.example"))
	// Unparsable user information: the password is still found, so an
	// error text quoting the URL cannot carry it.
	require.Equal(t, "S3cret^Pass", exchange.URLPassword("https://proxyuser:S3cret^Pass@127.0.0.1:9/okx"))
	require.Equal(t, "tok en", exchange.URLPassword("https://tok en@proxy.example"))
}
