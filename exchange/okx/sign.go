package okx

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"time"
)

// Sign is OKX's v5 request signature: the Base64 of the HMAC-SHA256, keyed
// by the API secret, of timestamp + METHOD + requestPath + body, where
// timestamp is the OK-ACCESS-TIMESTAMP header, requestPath includes a
// GET's query string and body is the JSON body as sent ("" for a GET).
func Sign(secret, timestamp, method, requestPath, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestamp + method + requestPath + body))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Timestamp formats t as OK-ACCESS-TIMESTAMP: ISO 8601 UTC with
// milliseconds, e.g. 2020-12-08T09:08:57.715Z.
func Timestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
