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
// endpoints this adapter calls. A code not listed is ClassUnknown, as on
// Binance and OKX: Bybit's docs never say that a non-zero retCode means the
// request was not carried out (guide.mdx calls retCode only "Success/Error
// code"), error.mdx lists codes after which the order may exist (10000
// "Server Timeout", 170146 "Order creation timeout"), and Bybit adds codes.
// So every refusal hoox relies on is listed here, each checked against
// error.mdx. Set-leverage's 110043 ("leverage not modified") and
// trading-stop's 34040 ("not modified") are success, handled where they
// are called; cancel's 110001 / 170213 ("order does not exist") are
// answered by a lookup there.
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
		{170130, ClassFilter, "a parameter's value is not valid (spot qty, price, TP/SL, …)"},

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

		// Refused for good, listed since unlisted codes are unknown: the
		// order's own fields.
		{170105, ClassRejected, "a required parameter was empty (spot)"},
		{170115, ClassRejected, "invalid timeInForce (spot)"},
		{170116, ClassRejected, "invalid orderType (spot)"},
		{170117, ClassRejected, "invalid side (spot)"},
		{170124, ClassRejected, "order amount too large (spot)"},
		{170132, ClassRejected, "order price too high (spot)"},
		{170133, ClassRejected, "order price below the minimum (spot)"},
		{170192, ClassRejected, "order price above the limit (spot)"},
		{170371, ClassRejected, "order price below the price limitation (spot)"},
		{170372, ClassRejected, "order price above the price limitation (spot)"},
		{170381, ClassRejected, "order quantity too large (spot)"},
		{170382, ClassRejected, "order quantity too large (spot)"},
		{170341, ClassRejected, "order quantity above the maximum (spot)"},
		{170197, ClassRejected, "buy quantity too large: the price would deviate from the market (spot)"},
		{170198, ClassRejected, "sell quantity too large: the price would deviate from the market (spot)"},
		{170228, ClassRejected, "buy amount above the estimated maximum (spot)"},
		{170229, ClassRejected, "sell quantity above the estimated maximum (spot)"},
		{170159, ClassRejected, "no market orders in a new pair's first minutes (spot)"},
		{170217, ClassRejected, "only LIMIT-MAKER orders on this pair (spot)"},
		{170210, ClassRejected, "new order rejected (spot)"},
		{170810, ClassRejected, "more than 500 conditional, TP/SL and active orders (spot)"},
		{30208, ClassRejected, "price above the maximum buying price"},
		{30209, ClassRejected, "price below the minimum selling price"},
		{110120, ClassRejected, "order price below the price limitation"},
		{110121, ClassRejected, "order price above the price limitation"},
		{110009, ClassRejected, "more stop orders than allowed"},
		{110057, ClassRejected, "conditional or limit order carries TP/SL parameters it may not"},
		// Balance and margin.
		{110045, ClassRejected, "wallet balance insufficient"},
		{110051, ClassRejected, "available balance cannot cover the lowest price of the market"},
		{110052, ClassRejected, "available balance insufficient to set the price"},
		{110053, ClassRejected, "available balance cannot cover the market price and upper limit price"},
		{110131, ClassRejected, "margin limit exceeded under the LTV constraints (perps)"},
		{170033, ClassRejected, "insufficient account balance for margin (spot)"},
		{30256, ClassRejected, "margin limit exceeded under the LTV constraints (spot)"},
		// Positions, reduce-only and leverage.
		{110023, ClassRejected, "this contract only takes orders that reduce the position"},
		{110042, ClassRejected, "pre-delivery: this contract only takes orders that reduce the position"},
		{110013, ClassRejected, "cannot set leverage due to the risk limit level"},
		{110085, ClassRejected, "risk limit and margin ratio updated: choose a supported risk limit"},
		{110086, ClassRejected, "order leverage above the maximum for the risk limit tier"},
		// The account must act first (the operator reads Bybit's message).
		{10024, ClassRejected, "compliance rules triggered"},
		{110123, ClassRejected, "the Trading Terms must be agreed to"},
		{110125, ClassRejected, "the Trading Terms must be agreed to before trading this contract"},
		{170241, ClassRejected, "the project's risk disclosure must be confirmed (spot)"},
	}
}

// classify returns the class of a retCode, ClassUnknown when unlisted
// (ErrorTable says why).
func classify(code int) Class {
	return venuekit.ClassOf(ErrorTable(), code, ClassUnknown)
}

// tabled reports whether ErrorTable lists code.
func tabled(code int) bool {
	for _, c := range ErrorTable() {
		if c.Code == code {
			return true
		}
	}
	return false
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
