package venuekit

import (
	"errors"
	"net/url"
	"strings"
)

// Redacted stands in for a secret removed from a venue's text.
const Redacted = "[redacted]"

// Redact replaces every one of secrets (an API key, its secret, a
// passphrase, a request's signature) found in text, as sent or
// URL-encoded. A venue's error message may echo what was signed (Bybit's
// 10004 "error sign!" quotes its origin string, API key included), and a
// proxy's page or a transport error may quote the request; that text
// becomes an order's reason, a trace event, a notification, a log line
// and the sender's answer, so it is redacted where it enters hoox.
func Redact(text string, secrets ...string) string {
	for _, s := range secrets {
		if s == "" {
			continue
		}
		text = strings.ReplaceAll(text, s, Redacted)
		if q := url.QueryEscape(s); q != s {
			text = strings.ReplaceAll(text, q, Redacted)
		}
		if q := url.PathEscape(s); q != s {
			text = strings.ReplaceAll(text, q, Redacted)
		}
	}
	return text
}

// RedactError redacts secrets in the message of the *APIError err wraps,
// in place (each request builds its own), and returns err.
func RedactError(err error, secrets ...string) error {
	if e, ok := errors.AsType[*APIError](err); ok {
		e.Msg = Redact(e.Msg, secrets...)
	}
	return err
}
