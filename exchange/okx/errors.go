package okx

import "github.com/hoox/hoox/exchange/internal/venuekit"

// Class is what an OKX code means for the order; every adapter shares the
// classes (venuekit).
type Class = venuekit.Class

// The classes of the error table.
const (
	ClassRejected    = venuekit.ClassRejected
	ClassFilter      = venuekit.ClassFilter
	ClassDuplicate   = venuekit.ClassDuplicate
	ClassUnknown     = venuekit.ClassUnknown
	ClassUnreachable = venuekit.ClassUnreachable
	ClassRateLimited = venuekit.ClassRateLimited
	ClassTimestamp   = venuekit.ClassTimestamp
	ClassCredentials = venuekit.ClassCredentials
	ClassNotFound    = venuekit.ClassNotFound
)

// APIError is a failed request to OKX.
type APIError = venuekit.APIError

// CodeClass is one row of the error table.
type CodeClass struct {
	Code  int
	Class Class
	// Meaning is OKX's message, shortened.
	Meaning string
}

// ErrorTable classifies the OKX codes (the envelope's code, or an order's
// sCode) of the endpoints this adapter calls, from OKX's v5 error-code
// pages (docs/venues/okx.md says where each was read). A code not listed
// is ClassUnknown: a code hoox does not know proves nothing about whether
// the order exists, so a placement answered with one is reconciled.
func ErrorTable() []CodeClass {
	return []CodeClass{
		// The order may exist.
		{50001, ClassUnknown, "service temporarily unavailable"},
		{50004, ClassUnknown, "endpoint request timeout: does not mean the request succeeded or failed"},
		{50013, ClassUnknown, "systems are busy"},
		{50026, ClassUnknown, "system error"},
		{51054, ClassUnknown, "request timed out"},
		{51149, ClassUnknown, "order timed out"},
		// Transient, "try again later" (Error_Code/Rest_API/Public.md):
		// for an order its outcome is left to the reconcile, and a
		// set-leverage so answered is retried (503), never a refusal.
		{50005, ClassUnknown, "API endpoint inactive or unavailable (HTTP 410)"},
		{50046, ClassUnknown, "temporarily unavailable, try again later"},
		{50017, ClassUnknown, "frozen for now: try again later"},
		{50019, ClassUnknown, "frozen for now: try again later"},
		{50020, ClassUnknown, "frozen for now: try again later"},
		{50022, ClassUnknown, "frozen for now: try again later"},
		{50023, ClassUnknown, "frozen for now: try again later"},

		// Nothing was placed: refused at the door.
		{50102, ClassTimestamp, "timestamp request expired"},
		{50112, ClassTimestamp, "invalid OK-ACCESS-TIMESTAMP"},
		{50036, ClassTimestamp, "expTime earlier than the system time"},
		{50037, ClassUnreachable, "order expired (expTime passed before processing)"},
		{50011, ClassRateLimited, "rate limit reached"},
		{50040, ClassRateLimited, "too frequent operations"},
		{50061, ClassRateLimited, "order rate limit of the account reached"},
		{50100, ClassCredentials, "API frozen"},
		{50101, ClassCredentials, "API key does not match the environment (live vs demo)"},
		{50103, ClassCredentials, "OK-ACCESS-KEY empty"},
		{50104, ClassCredentials, "OK-ACCESS-PASSPHRASE empty"},
		{50105, ClassCredentials, "OK-ACCESS-PASSPHRASE incorrect"},
		{50110, ClassCredentials, "IP not in the key's whitelist"},
		{50111, ClassCredentials, "invalid OK-ACCESS-KEY"},
		{50113, ClassCredentials, "invalid signature"},
		{50114, ClassCredentials, "invalid authorization"},
		{50119, ClassCredentials, "API key does not exist"},
		{50120, ClassCredentials, "API key lacks permission"},
		{50030, ClassCredentials, "no permission for this endpoint"},
		{50035, ClassCredentials, "endpoint needs an IP-bound key"},
		{50027, ClassCredentials, "account restricted from trading"},
		{51024, ClassCredentials, "trading account blocked"},

		// The clOrdId is held by a pending order: adopt.
		{51016, ClassDuplicate, "client order ID already exists"},
		{51065, ClassDuplicate, "algoClOrdId already exists"},

		// Lookups.
		{51603, ClassNotFound, "order does not exist"},

		// Refused for good by an instrument rule: re-read the rules.
		{51020, ClassFilter, "order below the minimum order amount"},
		{51121, ClassFilter, "quantity not a multiple of the lot size"},
		{51150, ClassFilter, "quantity or price precision exceeds the limit"},
		{51007, ClassFilter, "order below 1 contract"},

		// Refused for good.
		{51000, ClassRejected, "parameter error"},
		{51001, ClassRejected, "instrument ID does not exist"},
		{51004, ClassRejected, "position limit for the leverage"},
		{51005, ClassRejected, "order above the maximum amount"},
		{51006, ClassRejected, "price outside the price limit"},
		{51008, ClassRejected, "insufficient balance or margin"},
		{51010, ClassRejected, "unsupported under the account mode"},
		{51021, ClassRejected, "pair or contract not yet listed"},
		{51022, ClassRejected, "contract suspended"},
		{51127, ClassRejected, "available balance is 0"},
		{51131, ClassRejected, "insufficient balance"},
		{51169, ClassRejected, "no position in this direction to reduce"},
		{51170, ClassRejected, "reduce-only order in the position's direction"},
		{51201, ClassRejected, "market order value above the limit"},
		{51202, ClassRejected, "market order amount above the maximum"},
		{59107, ClassRejected, "leverage not changed: pending orders under the service"},

		// Attached take-profit / stop-loss refused for good (the entry is
		// not placed).
		{51044, ClassRejected, "order type not allowed to set stop loss and take profit"},
		{51046, ClassRejected, "take-profit trigger not above the order price (buy)"},
		{51047, ClassRejected, "stop-loss trigger not below the order price (buy)"},
		{51048, ClassRejected, "take-profit trigger not below the order price (sell)"},
		{51049, ClassRejected, "stop-loss trigger not above the order price (sell)"},
		{51050, ClassRejected, "take-profit trigger not above the best ask (buy)"},
		{51051, ClassRejected, "stop-loss trigger not below the best ask (buy)"},
		{51052, ClassRejected, "take-profit trigger not below the best bid (sell)"},
		{51053, ClassRejected, "stop-loss trigger not above the best bid (sell)"},
		{51100, ClassRejected, "take-profit/stop-loss on a reduce-only order"},

		// Trailing stops (algo orders, move_order_stop) refused for good.
		{50015, ClassRejected, "either of two parameters is required"},
		{51058, ClassRejected, "no available position for this algo order"},
		{51257, ClassRejected, "trailing stop callback rate outside its range"},
		{51165, ClassRejected, "reduce-only orders on the instrument at their upper limit"},
		{51260, ClassRejected, "maximum pending trailing stop orders reached"},
		{51311, ClassRejected, "trailing stop callback rate outside its range"},
	}
}

// classify returns the class of an OKX code (ClassUnknown when unlisted).
func classify(code int) Class {
	return venuekit.ClassOf(ErrorTable(), code, ClassUnknown)
}
