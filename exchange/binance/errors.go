package binance

import (
	"strings"

	"github.com/hoox/hoox/exchange/internal/venuekit"
)

// Class is what an answer from Binance means for the order: the gateway's
// branch (reject, adopt, reconcile, roll back) follows from it. Every
// adapter shares the classes (venuekit); README's error-class table lists
// the codes.
type Class = venuekit.Class

// The error classes (see venuekit for what each means to the gateway).
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
	// ClassArchived answers a spot lookup (-2026 ORDER_ARCHIVED): the
	// order existed, was cancelled or expired with nothing executed, and
	// Binance archived it. Never "not found": the client order ID was used.
	ClassArchived = venuekit.ClassArchived
)

// errorClasses is Binance's error code → class table, for spot and USDⓈ-M
// futures (codes that exist on one market only never appear on the other).
// Codes not listed are ClassUnknown, whatever the HTTP status: a code hoox
// does not know proves nothing about whether the order exists (Binance
// adds codes, and a 4xx's "the issue is on the sender's side" does not say
// the matching engine did nothing), so a placement answered with one is
// reconciled, never recorded as refused for good.
var errorClasses = map[int]Class{
	-1000: ClassUnknown,     // UNKNOWN: an unknown error occurred while processing the request
	-1001: ClassUnknown,     // DISCONNECTED: internal error
	-1006: ClassUnknown,     // UNEXPECTED_RESP: execution status unknown
	-1007: ClassUnknown,     // TIMEOUT: send status unknown; execution status unknown
	-1008: ClassUnknown,     // SERVER_BUSY: not documented as "nothing done", so not assumed
	-1016: ClassUnreachable, // SERVICE_SHUTTING_DOWN: this service is no longer available (a 5xx stays unknown)
	-1002: ClassCredentials, // UNAUTHORIZED
	-1011: ClassCredentials, // futures NON_WHITE_LIST: this IP cannot access this route
	-2017: ClassCredentials, // futures API_KEYS_LOCKED: API keys are locked on this account
	-1022: ClassCredentials, // INVALID_SIGNATURE
	-2014: ClassCredentials, // BAD_API_KEY_FMT
	-2015: ClassCredentials, // REJECTED_MBX_KEY: invalid key, IP, or permissions
	-1003: ClassRateLimited, // TOO_MANY_REQUESTS
	-1015: ClassRateLimited, // TOO_MANY_ORDERS
	-1021: ClassTimestamp,   // INVALID_TIMESTAMP: outside recvWindow / ahead of server time
	-5028: ClassTimestamp,   // futures ME_RECVWINDOW_REJECT: outside recvWindow at the matching engine
	-2013: ClassNotFound,    // NO_SUCH_ORDER
	-4116: ClassDuplicate,   // futures: ClientOrderId is duplicated (only while open)
	-2010: ClassRejected,    // NEW_ORDER_REJECTED: some messages mean otherwise (messageClasses)
	-1013: ClassFilter,      // INVALID_MESSAGE: "Filter failure: ..."
	-1111: ClassFilter,      // BAD_PRECISION
	-4003: ClassFilter,      // futures: quantity less than or equal to zero
	-4004: ClassFilter,      // futures: quantity less than min quantity
	-4005: ClassFilter,      // futures: quantity greater than max quantity
	-4013: ClassFilter,      // futures: price less than min price
	-4014: ClassFilter,      // futures: price not increased by tick size
	-4016: ClassFilter,      // futures PRICE_HIGHTER_THAN_MULTIPLIER_UP: a BUY above PERCENT_PRICE's cap
	-4024: ClassFilter,      // futures PRICE_LOWER_THAN_MULTIPLIER_DOWN: a SELL below PERCENT_PRICE's floor
	-4023: ClassFilter,      // futures: quantity not increased by step size
	-4164: ClassFilter,      // futures: notional below MIN_NOTIONAL
	-1014: ClassRejected,    // UNKNOWN_ORDER_COMPOSITION: unsupported order combination
	-1100: ClassRejected,    // ILLEGAL_CHARS
	-1101: ClassRejected,    // TOO_MANY_PARAMETERS
	-1102: ClassRejected,    // MANDATORY_PARAM_EMPTY_OR_MALFORMED
	-1103: ClassRejected,    // UNKNOWN_PARAM
	-1104: ClassRejected,    // UNREAD_PARAMETERS
	-1105: ClassRejected,    // PARAM_EMPTY
	-1106: ClassRejected,    // PARAM_NOT_REQUIRED
	-1112: ClassRejected,    // NO_DEPTH: no orders on book for symbol
	-1114: ClassRejected,    // TIF_NOT_REQUIRED
	-1115: ClassRejected,    // INVALID_TIF
	-1116: ClassRejected,    // INVALID_ORDER_TYPE
	-1117: ClassRejected,    // INVALID_SIDE
	-1121: ClassRejected,    // BAD_SYMBOL
	-1128: ClassRejected,    // OPTIONAL_PARAMS_BAD_COMBO
	-1130: ClassRejected,    // INVALID_PARAMETER
	-2018: ClassRejected,    // futures: balance is insufficient
	-2019: ClassRejected,    // futures: margin is insufficient
	-2020: ClassRejected,    // futures UNABLE_TO_FILL
	-2021: ClassRejected,    // futures ORDER_WOULD_IMMEDIATELY_TRIGGER (spot: cancel-replace only, never sent)
	-2022: ClassRejected,    // futures: ReduceOnly order is rejected
	-2023: ClassRejected,    // futures USER_IN_LIQUIDATION
	-2024: ClassRejected,    // futures POSITION_NOT_SUFFICIENT
	-2025: ClassRejected,    // futures MAX_OPEN_ORDER_EXCEEDED
	-2026: ClassRejected,    // futures REDUCE_ONLY_ORDER_TYPE_NOT_SUPPORTED (spot ORDER_ARCHIVED: messageClasses)
	-2027: ClassRejected,    // futures MAX_LEVERAGE_RATIO: position too large for the leverage
	-2028: ClassRejected,    // futures MIN_LEVERAGE_RATIO: insufficient margin balance
	-4001: ClassRejected,    // futures: price less than 0
	-4002: ClassRejected,    // futures: price greater than max price
	-4015: ClassRejected,    // futures: client order id is not valid
	-4028: ClassRejected,    // futures: leverage is not valid
	-4045: ClassRejected,    // futures MAX_STOP_ORDER_EXCEEDED: the symbol's MAX_NUM_ALGO_ORDERS is reached
	-4061: ClassRejected,    // futures: position side does not match (hedge mode account)
	-4062: ClassRejected,    // futures REDUCE_ONLY_CONFLICT
	-4087: ClassCredentials, // futures REDUCE_ONLY_ORDER_PERMISSION: the account may only reduce
	-4088: ClassCredentials, // futures NO_PLACE_ORDER_PERMISSION: the account may not place orders now
	-4118: ClassRejected,    // futures REDUCE_ONLY_MARGIN_CHECK_FAILED: a same-side open order would flip the position
	-4131: ClassRejected,    // futures MARKET_ORDER_REJECT: best price outside PERCENT_PRICE
	-4140: ClassRejected,    // futures INVALID_OPENING_POSITION_STATUS: the symbol takes no opening order now
	-4189: ClassRejected,    // futures ACCOUNT_REDUCE_ONLY: reduce-only orders only on the symbol
	-4192: ClassCredentials, // futures COOLING_OFF_PERIOD: the account may not trade now
	-4400: ClassRejected,    // futures TRADING_QUANTITATIVE_RULE: reduce-only orders only, for now
	-4401: ClassRejected,    // futures LARGE_POSITION_SYM_RULE: reduce-only orders only
	-4402: ClassRejected,    // futures COMPLIANCE_BLACK_SYMBOL_RESTRICTION: not available in the region
	-4105: ClassRejected,    // futures: symbol under risk control, reduce-only orders only
	-4106: ClassRejected,    // futures: symbol under risk control, buys reduce-only only
	-4107: ClassRejected,    // futures: symbol under risk control, sells reduce-only only
}

// messageClass is a code whose class depends on its message: -2010
// NEW_ORDER_REJECTED carries the matching engine's reason, and some
// reasons are not about the order (errors.md, "Messages for -1010
// ERROR_MSG_RECEIVED, -2010 NEW_ORDER_REJECTED, and -2011
// CANCEL_REJECTED").
type messageClass struct {
	code int
	// msg is matched as a substring, without its final period.
	msg   string
	class Class
}

// messageClasses come before errorClasses.
var messageClasses = []messageClass{
	// The client order ID is held by an open order (spot).
	{-2010, "Duplicate order sent.", ClassDuplicate},
	// The account, or this API server, may not trade: nothing was placed,
	// and the operator, not the signal, has to change something.
	{-2010, "This account may not place or cancel orders.", ClassCredentials},
	{-2010, "This action is disabled on this account.", ClassCredentials},
	{-2010, "Rest API trading is not enabled.", ClassCredentials},
	// Spot -2026 ORDER_ARCHIVED (errors.md); the same code on futures is
	// REDUCE_ONLY_ORDER_TYPE_NOT_SUPPORTED, a refusal.
	{-2026, "Order was canceled or expired with no executed qty over 90 days ago and has been archived.", ClassArchived},
}

// classify returns the class of a Binance error answer. httpStatus does
// not change it: an unlisted code is unknown in a 4xx as in a 5xx (and
// do makes every 5xx unknown).
func classify(_, code int, msg string) Class {
	for _, m := range messageClasses {
		if code == m.code && strings.Contains(msg, strings.TrimSuffix(m.msg, ".")) {
			return m.class
		}
	}
	if c, ok := errorClasses[code]; ok {
		return c
	}
	return ClassUnknown
}

// tabled reports whether errorClasses or messageClasses lists code (with
// msg).
func tabled(code int, msg string) bool {
	for _, m := range messageClasses {
		if code == m.code && strings.Contains(msg, strings.TrimSuffix(m.msg, ".")) {
			return true
		}
	}
	_, ok := errorClasses[code]
	return ok
}

// APIError is a failed request to Binance: its HTTP status, code and
// message, and what they mean. It unwraps to the exchange errors its class
// stands for, so callers branch with errors.Is.
type APIError = venuekit.APIError
