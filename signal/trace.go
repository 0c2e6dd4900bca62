package signal

import (
	"strconv"
	"strings"
	"time"
)

// KeySource says where a trace ID came from. It is stored with the trace so
// an operator can tell a sender's own key from one hoox derived.
type KeySource string

// Key sources, in the order DeriveTrace prefers them.
const (
	// KeyClient: the Idempotency-Key header or the body's trace_id.
	KeyClient KeySource = "client"
	// KeyDerived: the fingerprint of a signal that carries a timestamp.
	KeyDerived KeySource = "derived"
	// KeyWindow: the fingerprint of a signal with neither key nor
	// timestamp, deduplicated over a sliding window.
	KeyWindow KeySource = "window"
)

// Modes of a trace.
const (
	ModeLive = "live"
	ModeTest = "test"
)

// Trace is the identity under which a signal is claimed.
type Trace struct {
	// ID is the trace ID hoox stores and reports: "k:<client key>",
	// "d:<fingerprint>" or "w:<fingerprint>:<unix ms>", each prefixed
	// "test:" for test signals. The prefixes keep a client key from ever
	// colliding with a derived one, and test from live.
	ID string
	// LockKey is what the advisory lock is taken on. It equals ID, except
	// for a window trace, where it leaves out the time so every repeat of
	// the signal inside the window waits on the same lock and then sees
	// the first one's claim.
	LockKey string
	// Source is where the key came from.
	Source KeySource
	// Fingerprint is the signal's Fingerprint, stored with every trace so
	// a client key reused for a different signal is detected.
	Fingerprint string
	// Mode is "live" or "test".
	Mode string
}

// DeriveTrace picks the trace identity of s: the client key from the
// Idempotency-Key header (validated like trace_id) or s.ClientKey; else a
// derived key when s has a timestamp; else a window key stamped with now.
// now is passed in, not read, so the package stays pure.
//
// A header key beside a different body key is refused, never preferred:
// the body may be signed while the header is not, and a header that could
// override a signed body's key would let one captured request be resent
// under any number of fresh keys, each a new order. An invalid or
// contradicting header is an *Error with Field "Idempotency-Key".
func DeriveTrace(s Signal, headerKey string, now time.Time) (Trace, error) {
	tr := Trace{Fingerprint: s.Fingerprint(), Mode: ModeLive}
	prefix := ""
	if s.Test {
		tr.Mode = ModeTest
		prefix = "test:"
	}

	key := s.ClientKey
	if headerKey != "" {
		if msg := validKey(headerKey); msg != "" {
			return Trace{}, &Error{Field: HeaderIdempotencyKey, Msg: msg}
		}
		if key != "" && key != headerKey {
			return Trace{}, &Error{Field: HeaderIdempotencyKey,
				Msg: "differs from the body's trace_id; send one key, or the same key in both"}
		}
		key = headerKey
	}

	switch {
	case key != "":
		tr.Source = KeyClient
		tr.ID = prefix + "k:" + key
		tr.LockKey = tr.ID
	case !s.Timestamp.IsZero():
		tr.Source = KeyDerived
		tr.ID = prefix + "d:" + tr.Fingerprint
		tr.LockKey = tr.ID
	default:
		tr.Source = KeyWindow
		tr.LockKey = prefix + "w:" + tr.Fingerprint
		tr.ID = tr.LockKey + ":" + strconv.FormatInt(now.UnixMilli(), 10)
	}
	return tr, nil
}

// ForAccount is the signal that account executes: s with Exchange set to
// the account and the account list dropped. Its Canonical (and so its
// Fingerprint) names the account, so one signal on two accounts is two
// fingerprints, and a key reused on one account with a different signal is
// caught per account.
func (s Signal) ForAccount(account string) Signal {
	s.Exchange = account
	s.Accounts = nil
	s.FanOut = false
	return s
}

// DeriveAccountTrace is the trace of s on account, whose venue is venue:
// each (signal, account) pair is its own exactly-once unit.
//
// A venue's default account (account == venue: the account configured by
// HOOX_<VENUE>_*, named as the venue) keeps DeriveTrace's trace, so a
// signal sent with "exchange" alone, with "account" naming that default
// account, or in a list, is one unit and today's traces are unchanged. A
// named account's trace is the default account's trace on the same venue
// with "@<account>:" put in front (after "test:"): "@sub1:k:<key>",
// "@sub1:d:<fingerprint>", "@sub1:w:<fingerprint>:<unix ms>". Its lock key
// (and so its client order IDs) is prefixed the same way, and its
// fingerprint is that of s.ForAccount(account). A client key cannot start
// with "@": every trace ID of a client key starts with "k:" or "test:k:",
// so no key, whatever characters it holds, meets an account's trace.
func DeriveAccountTrace(s Signal, account, venue, headerKey string, now time.Time) (Trace, error) {
	own := s.ForAccount(account)
	if account == venue {
		return DeriveTrace(own, headerKey, now)
	}
	tr, err := DeriveTrace(s.ForAccount(venue), headerKey, now)
	if err != nil {
		return Trace{}, err
	}
	prefix := ""
	if tr.Mode == ModeTest {
		prefix = "test:"
	}
	tag := prefix + "@" + account + ":"
	tr.ID = tag + strings.TrimPrefix(tr.ID, prefix)
	tr.LockKey = tag + strings.TrimPrefix(tr.LockKey, prefix)
	tr.Fingerprint = own.Fingerprint()
	return tr, nil
}

// SplitAccountTrace undoes DeriveAccountTrace's prefix: the named account
// a trace ID belongs to ("" for a venue's default account) and the trace
// ID the signal has on its venue's default account. A fan-out's traces on
// one venue share that base, which is how they are found together.
func SplitAccountTrace(id string) (account, base string) {
	prefix := ""
	rest := id
	if strings.HasPrefix(rest, "test:") {
		prefix, rest = "test:", rest[len("test:"):]
	}
	if !strings.HasPrefix(rest, "@") {
		return "", id
	}
	i := strings.IndexByte(rest, ':')
	if i < 2 {
		return "", id
	}
	return rest[1:i], prefix + rest[i+1:]
}
