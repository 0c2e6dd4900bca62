package bybit

import "github.com/hoox/hoox/exchange/internal/venuekit"

// Class is what a Bybit retCode means for an order: whether anything can
// have been placed, and what the gateway does next. Every adapter shares
// the classes (venuekit); the README's error-class table lists the same
// codes (a test keeps them in step).
type Class = venuekit.Class

// The classes of the error table (see venuekit for what each means to the
// gateway). Bybit's timestamp refusals (10002, -1) are ClassUnreachable
// that also resync the clock.
const (
	ClassRejected    = venuekit.ClassRejected
	ClassFilter      = venuekit.ClassFilter
	ClassDuplicate   = venuekit.ClassDuplicate
	ClassUnknown     = venuekit.ClassUnknown
	ClassUnreachable = venuekit.ClassUnreachable
	ClassRateLimited = venuekit.ClassRateLimited
	ClassCredentials = venuekit.ClassCredentials
)

// CodeClass is one row of the error table.
type CodeClass struct {
	Code  int
	Class Class
	// Meaning is Bybit's description, shortened.
	Meaning string
}

// ErrorTable is the one table that classifies Bybit v5 retCodes for the
// endpoints this adapter calls. A code not listed is ClassRejected: Bybit
// answers a retCode other than 0 only for a request it did not carry out,
// and the codes that leave the outcome open are listed as ClassUnknown.
// Set-leverage's 110043 ("leverage not modified") is success and handled
// where leverage is set, not here.
func ErrorTable() []CodeClass {
	return []CodeClass{
		// Nothing was placed: the request was refused at the door.
		{10002, ClassUnreachable, "request time outside recv_window (clock skew): resync server time"},
		{-1, ClassUnreachable, "request expired before Bybit carried it out: resync server time"},
		{10017, ClassUnreachable, "route not found (base url or path)"},
		{10003, ClassCredentials, "API key is invalid (or belongs to the other environment: mainnet vs testnet)"},
		{10004, ClassCredentials, "signature error"},
		{10005, ClassCredentials, "permission denied: the key lacks trade permission"},
		{10007, ClassCredentials, "user authentication failed"},
		{10010, ClassCredentials, "unmatched IP: the key is bound to other IP addresses"},
		{10008, ClassCredentials, "common banned: check the account mode"},
		{10009, ClassCredentials, "service restricted for the host's region"},
		{10027, ClassCredentials, "transactions are banned on this account"},
		{10028, ClassCredentials, "the API is only for unified account users"},
		{10029, ClassCredentials, "symbol not in the key's symbol whitelist"},
		{33004, ClassCredentials, "API key expired (derivatives)"},
		{-2015, ClassCredentials, "API key expired (spot)"},
		{10006, ClassRateLimited, "too many visits: API rate limit per UID and endpoint"},
		{10018, ClassRateLimited, "IP rate limit exceeded"},
		{170005, ClassRateLimited, "too many new spot orders"},
		{170222, ClassRateLimited, "too many requests in this time frame (spot)"},

		// The order may exist.
		{10000, ClassUnknown, "server timeout"},
		{10016, ClassUnknown, "server error or service restarting"},
		{429, ClassUnknown, "trading service under high load"},
		{110079, ClassUnknown, "order is being processed"},
		{170001, ClassUnknown, "internal error (spot)"},
		{170007, ClassUnknown, "timeout waiting for the backend (spot)"},
		{170032, ClassUnknown, "network error (spot)"},
		{170035, ClassUnknown, "submitted to the system for processing (spot)"},
		{170146, ClassUnknown, "order creation timeout (spot)"},
		{170234, ClassUnknown, "system error (spot)"},

		// The orderLinkId is taken: adopt.
		{110072, ClassDuplicate, "OrderLinkedID is duplicate (linear)"},
		{170141, ClassDuplicate, "duplicate clientOrderId (spot)"},
		{10014, ClassDuplicate, "invalid duplicate request"},

		// Refused for good by a filter: refetch the symbol's filters.
		{10001, ClassFilter, "request parameter error (linear qty/price precision, min qty, …)"},
		{110094, ClassFilter, "order notional below minNotionalValue (linear)"},
		{170134, ClassFilter, "price has too many decimals (spot)"},
		{170136, ClassFilter, "quantity below minimum (spot)"},
		{170137, ClassFilter, "quantity has too many decimals (spot)"},
		{170140, ClassFilter, "order value below minOrderAmt (spot)"},
		{170148, ClassFilter, "market order amount has too many decimals (spot)"},

		// Refused for good.
		{110003, ClassRejected, "price outside the allowed range"},
		{110004, ClassRejected, "wallet balance insufficient"},
		{110006, ClassRejected, "assets cannot cover the position margin"},
		{110007, ClassRejected, "available balance insufficient"},
		{110012, ClassRejected, "insufficient available balance"},
		{110017, ClassRejected, "reduce-only order with no position to reduce"},
		{110020, ClassRejected, "more than 500 active orders"},
		{110021, ClassRejected, "position limit exceeded (open interest)"},
		{110040, ClassRejected, "order would trigger liquidation"},
		{110044, ClassRejected, "available margin insufficient"},
		{110061, ClassRejected, "more than 20 take-profits/stop-losses in Partial mode on the symbol"},
		{110066, ClassRejected, "trading not allowed"},
		{110074, ClassRejected, "contract not live"},
		{110090, ClassRejected, "position would exceed the limit for this leverage"},
		{170121, ClassRejected, "invalid symbol (spot)"},
		{170131, ClassRejected, "balance insufficient (spot)"},
		{170151, ClassRejected, "trading pair not open yet (spot)"},
		{170157, ClassRejected, "trading pair not available for API trading (spot)"},
		{170193, ClassRejected, "buy price above the limit (spot)"},
		{170194, ClassRejected, "sell price below the limit (spot)"},
	}
}

// classify returns the class of a retCode (ClassRejected when unlisted).
func classify(code int) Class {
	return venuekit.ClassOf(ErrorTable(), code, ClassRejected)
}

// APIError is a retCode other than 0 (or an HTTP failure) from one
// request, kept with its class so that callers branch once.
type APIError = venuekit.APIError

// newAPIError builds the error for a class. Bybit's unknown outcomes stay
// unknown whatever the request (MayExist): a lost answer to a read before
// the order is turned into "nothing sent" by asUnreachable where Place
// makes that read.
func newAPIError(class Class, path string, status, code int, msg string) *APIError {
	return &APIError{Venue: "bybit", Path: path, HTTPStatus: status, Code: code, Msg: msg, Class: class, MayExist: true}
}
