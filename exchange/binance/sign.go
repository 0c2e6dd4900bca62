package binance

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"
)

// Sign is Binance's HMAC-SHA256 request signature: the lower-case hex HMAC
// of payload (the query string concatenated with the request body, both
// percent-encoded, without the signature itself) under the API secret.
func Sign(secret, payload string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(payload))
	return hex.EncodeToString(mac.Sum(nil))
}

// param is one request parameter; params keep the order they are added in,
// so the signed string reads like the documentation's examples.
type param struct{ key, value string }

type params []param

func (p params) add(key, value string) params { return append(p, param{key, value}) }

// encode percent-encodes the parameters as key=value pairs joined by &.
func (p params) encode() string {
	var b strings.Builder
	for i, kv := range p {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(kv.key))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(kv.value))
	}
	return b.String()
}
