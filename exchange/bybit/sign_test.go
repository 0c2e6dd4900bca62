package bybit

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The inputs are the examples on Bybit's v5 "Integration Guidance" page
// (docs/v5/guide.mdx, "Create A Request"). That page prints a resulting
// signature for each but not the secret that made it, so those signatures
// cannot be reproduced; the secret here is the one Bybit's own sample
// script uses (api-usage-examples, V5_demo/api_demo/Encryption_HMAC.sh:
// secret_key='XXXXXXXXXX'). Each expected value was computed outside Go with
//
//	printf '%s' "<timestamp><api_key><recv_window><payload>" | openssl dgst -sha256 -hmac XXXXXXXXXX
func TestSignMatchesBybitDocumentedExamples(t *testing.T) {
	t.Parallel()
	const secret, apiKey, recvWindow = "XXXXXXXXXX", "XXXXXXXXXX", "5000"
	tests := []struct {
		name, timestamp, payload, want string
	}{
		{
			name:      "GetQueryString",
			timestamp: "1658384314791",
			payload:   "category=option&symbol=BTC-29JUL22-25000-C",
			want:      "c00720f96c5934ca7057ac28ae65b823f83b8b67a8fe784e7795ca0fa3c148ec",
		},
		{
			name:      "PostJSONBody",
			timestamp: "1658385579423",
			payload:   `{"category": "option"}`,
			want:      "fbb4648b585b3e62de2c4eaecc8f3b6066aa18e98cc300eaff4d87f15b55724a",
		},
		{
			name:      "PostCreateOrderFromSampleScript",
			timestamp: "1658385579423",
			payload:   `{"category":"linear","symbol": "BTCUSDT","side": "Buy","positionIdx": 0,"orderType": "Limit","qty": "0.001","price": "10000","timeInForce": "GTC","orderLinkId": "TEST1234"}`,
			want:      "938159bb46e3bab06649ce7d2a9cb99529f9f5f3b5441ee707d322d80d3a0d85",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, Sign(secret, tt.timestamp, apiKey, recvWindow, tt.payload))
		})
	}
}
