package exchange

import (
	"net/url"
	"strings"
)

// RedactURL is raw as it may be shown (a page, a log line, a command's
// output): the user information of a base URL that reaches a venue
// through a proxy with basic auth (https://user:password@proxy) is
// replaced, password and user both, since a user alone may be the token.
// Where the requests go (scheme, host, path) stays.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		// Unparsable: hide anything before an @ in the authority.
		if i := strings.Index(raw, "://"); i >= 0 {
			rest := raw[i+3:]
			if at := strings.LastIndex(rest, "@"); at >= 0 {
				return raw[:i+3] + "[redacted]@" + rest[at+1:]
			}
		}
		return raw
	}
	if u.User == nil {
		return raw
	}
	u.User = nil
	return strings.Replace(u.String(), "://", "://[redacted]@", 1)
}

// URLPassword is the password (or, without one, the user) in raw's user
// information, "" when there is none: a secret an error text must not
// carry either. An unparsable URL (a password with a character user
// information may not carry unencoded) gives the text RedactURL hides:
// from the authority's start to its last @, after the first colon when
// there is one.
func URLPassword(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		i := strings.Index(raw, "://")
		if i < 0 {
			return ""
		}
		rest := raw[i+3:]
		at := strings.LastIndex(rest, "@")
		if at < 0 {
			return ""
		}
		info := rest[:at]
		if c := strings.Index(info, ":"); c >= 0 && c+1 < len(info) {
			return info[c+1:]
		}
		return info
	}
	if u.User == nil {
		return ""
	}
	if p, ok := u.User.Password(); ok {
		return p
	}
	return u.User.Username()
}
