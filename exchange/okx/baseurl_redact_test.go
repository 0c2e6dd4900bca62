package okx_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/okx"
)

// A proxy password with a character a URL's user information may not
// carry unencoded ('^', '#', '[', a space: common in generated passwords)
// makes the base URL unparsable, and every request would fail with an
// error quoting the URL, password included. It is refused at start, and
// the refusal does not show the password either.
func TestOKXRefusesAnUnparsableBaseURLWithoutShowingItsPassword(t *testing.T) {
	t.Parallel()
	const password = "S3cret^Pass"
	base := "https://proxyuser:" + password + "@127.0.0.1:9/okx"
	_, err := okx.New(okx.Config{Market: okx.MarketSpot, APIKey: "key-0123456789", APISecret: "secret-0123456789",
		Passphrase: "Passphrase-1", BaseURL: base})
	require.Error(t, err, "an unparsable base URL is refused at start")
	require.NotContains(t, err.Error(), password)
	require.NotContains(t, err.Error(), "proxyuser")
}
