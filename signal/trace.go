package signal

import (
	"strconv"
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
