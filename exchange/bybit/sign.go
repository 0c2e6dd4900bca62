package bybit

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// Sign is Bybit v5's HMAC signature: lower-case hex HMAC-SHA256, keyed by the
// API secret, of timestamp + api key + recv_window + payload, where payload
// is the query string of a GET and the JSON body of a POST, byte for byte as
// sent.
func Sign(secret, timestamp, apiKey, recvWindow, payload string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestamp + apiKey + recvWindow + payload))
	return hex.EncodeToString(mac.Sum(nil))
}
