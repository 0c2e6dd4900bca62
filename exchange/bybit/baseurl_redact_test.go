package bybit_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/bybit"
)

// A proxy password with a character a URL's user information may not
// carry unencoded ('^', '#', '[', a space) makes HOOX_BYBIT_BASE_URL
// unparsable, and every request would fail with an error quoting the URL,
// password included. It is refused at start, without the password.
func TestBybitRefusesAnUnparsableBaseURLWithoutShowingItsPassword(t *testing.T) {
	t.Parallel()
	const password = "S3cret^Pass"
	base := "https://proxyuser:" + password + "@127.0.0.1:9/bybit"
	_, err := bybit.New(bybit.Config{Market: bybit.MarketLinear, APIKey: "key-0123456789", APISecret: "secret-0123456789", BaseURL: base})
	require.Error(t, err, "an unparsable base URL is refused at start")
	require.NotContains(t, err.Error(), password)
}
