// Package codes is every problem code hoox answers with: the stable `code`
// member of a problem+json body, which senders and operators branch on.
// The gateway refuses signals with some, the HTTP layer raises the rest;
// declaring them in one leaf keeps the vocabulary in one place, and api's
// one table maps each to its HTTP status.
package codes

// Codes the gateway returns for a signal.
const (
	InvalidSignal = "invalid_signal"
	Duplicate     = "duplicate"
	InProgress    = "in_progress"
	KeyReused     = "key_reused"
	OrderRejected = "order_rejected"
	Unavailable   = "unavailable"
	KillSwitch    = "kill_switch"
	// Unsupported refuses a valid signal the venue cannot carry out (an
	// attached take-profit on a venue without one): 422, nothing placed.
	Unsupported = "unsupported"
	// AccountsRefused answers a fan-out whose accounts all refused or
	// repeated, for different reasons: each account's own answer says
	// which.
	AccountsRefused = "accounts_refused"
)

// Codes the HTTP layer raises itself.
const (
	Unauthorized     = "unauthorized"
	Forbidden        = "forbidden"
	TooLarge         = "payload_too_large"
	UnsupportedMedia = "unsupported_media_type"
	RateLimited      = "rate_limited"
	NotFound         = "not_found"
	InvalidRequest   = "invalid_request"
	MethodNotAllowed = "method_not_allowed"
	// RequestTimeout answers a body that did not arrive within the
	// server's read timeout: nothing was done, the request may be sent
	// again.
	RequestTimeout = "request_timeout"
	Internal       = "internal"
	// Reconciling refuses to release a trace whose order may exist at the
	// venue: the reconcile settles it first.
	Reconciling = "reconciling"
	// TraceChanged refuses a release that named a claim (its received_at)
	// the trace no longer holds: it was released and claimed again since.
	TraceChanged = "trace_changed"
	// LedgerChanged refuses a ledger set that named the value it replaces
	// ("was") when the entry no longer holds it: a fill moved it since.
	LedgerChanged = "ledger_changed"
)
