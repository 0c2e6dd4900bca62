package signal

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClientOrderID(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		traceID string
		n       int
	}{
		{"client key", "k:alert-42", 0},
		{"derived", "d:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", 0},
		{"window retry", "test:w:abc:1714564805123", 3},
		{"empty trace", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := ClientOrderID("", tt.traceID, tt.n)
			require.Len(t, id, 32)
			require.Regexp(t, `^hx[a-z2-7]{30}$`, id, "alphanumeric and at most 36 characters for Binance, Bybit and OKX")
			require.Equal(t, id, ClientOrderID("", tt.traceID, tt.n), "a retry must get the same ID")
			require.NotEqual(t, id, ClientOrderID("", tt.traceID, tt.n+1), "the next execution must get a new ID")
			require.NotEqual(t, id, ClientOrderID("", tt.traceID+"x", tt.n))
		})
	}
}

func TestClientOrderIDKnownValue(t *testing.T) {
	t.Parallel()

	// Pinned so that a change of encoding, which would make every pending
	// retry place a second order, fails loudly. SHA-256("k:abc" ‖
	// 0x0000000000000000) in lower-case base32, first 30 characters.
	require.Equal(t, pinnedOrderID, ClientOrderID("", "k:abc", 0))
}

// pinnedOrderID was computed independently (Python hashlib and base64) for
// trace ID "k:abc" and n = 0.
const pinnedOrderID = "hxdirhkoyzh4fxad5kyszfgi4pkloz7g"

// B10: the deployment namespaces the ID; without one (IDs derived before
// deployments existed) it is the pinned value.
func TestClientOrderIDDeploymentNamespace(t *testing.T) {
	t.Parallel()
	staging := ClientOrderID("0123456789abcdef0123456789abcdef", "k:abc", 0)
	production := ClientOrderID("fedcba9876543210fedcba9876543210", "k:abc", 0)
	require.NotEqual(t, staging, production)
	require.NotEqual(t, pinnedOrderID, staging)
	require.Regexp(t, `^hx[a-z2-7]{30}$`, staging)
}
