package signal

import (
	"slices"
	"strconv"
)

// Canonical field names. The stored copy and the error messages use these,
// whatever alias the sender used.
const (
	FieldSecret    = "secret"
	FieldExchange  = "exchange"
	FieldSymbol    = "symbol"
	FieldAction    = "action"
	FieldQuantity  = "quantity"
	FieldPrice     = "price"
	FieldOrderType = "order_type"
	FieldLeverage  = "leverage"
	FieldTimestamp = "timestamp"
	FieldTraceID   = "trace_id"
	FieldTest      = "test"
	FieldStrategy  = "strategy"
	FieldComment   = "comment"
	// FieldQuantityType says what quantity counts (QuantityBase, …).
	FieldQuantityType = "quantity_type"
	// FieldSentiment is TradersPost's sentiment or TradingView's
	// {{strategy.market_position}}: "flat" closes the position.
	FieldSentiment = "sentiment"
	// FieldTakeProfit, FieldStopLoss and FieldTrailingStop are an entry's
	// attached exits: a price, or {"percent": p} from the entry's price.
	FieldTakeProfit   = "take_profit"
	FieldStopLoss     = "stop_loss"
	FieldTrailingStop = "trailing_stop"
	// FieldAccount names one configured account to trade on;
	// FieldAccounts a list of them (a fan-out). Neither: the exchange's
	// default account.
	FieldAccount  = "account"
	FieldAccounts = "accounts"
)

// HeaderIdempotencyKey is the header whose value is the client key; it is the
// Field of an *Error about that header.
const HeaderIdempotencyKey = "Idempotency-Key"

// fieldAliases lists, per canonical field, every key that may carry it, the
// canonical name first. The aliases keep Hoox alert templates ("apiKey",
// "orderType", "idempotencyKey", …) and TradingView habits ("ticker",
// "contracts", "timenow") working unchanged. A field without aliases is
// its own only key. Read-only: every request shares these slices.
var fieldAliases = map[string][]string{
	FieldSecret:       {"secret", "apiKey", "passphrase"},
	FieldExchange:     {FieldExchange},
	FieldSymbol:       {"symbol", "ticker"},
	FieldAction:       {"action", "side"},
	FieldQuantity:     {"quantity", "qty", "contracts"},
	FieldPrice:        {FieldPrice},
	FieldOrderType:    {"order_type", "orderType"},
	FieldLeverage:     {FieldLeverage},
	FieldTimestamp:    {"timestamp", "time", "timenow"},
	FieldTraceID:      {"trace_id", "transaction_id", "idempotencyKey", "idempotency_key"},
	FieldTest:         {FieldTest},
	FieldStrategy:     {FieldStrategy},
	FieldComment:      {FieldComment},
	FieldQuantityType: {"quantity_type", "quantityType"},
	FieldSentiment:    {"sentiment", "market_position"},
	FieldTakeProfit:   {"take_profit", "takeProfit"},
	FieldStopLoss:     {"stop_loss", "stopLoss"},
	FieldTrailingStop: {"trailing_stop", "trailingStop"},
	FieldAccount:      {FieldAccount},
	FieldAccounts:     {FieldAccounts},
}

// aliasesOf lists every key that may carry field (fieldAliases), without
// allocating for a known field: it runs several times per signal.
func aliasesOf(field string) []string {
	if keys, ok := fieldAliases[field]; ok {
		return keys
	}
	return []string{field}
}

// knownKeys are every key of fieldAliases: the ones Decode keeps.
var knownKeys = func() map[string]bool {
	out := map[string]bool{}
	for _, keys := range fieldAliases {
		for _, k := range keys {
			out[k] = true
		}
	}
	return out
}()

// foldedKeys maps every key of fieldAliases, lower-cased, to its field.
var foldedKeys = func() map[string]string {
	out := map[string]string{}
	for field, keys := range fieldAliases {
		for _, k := range keys {
			out[foldKey(k)] = field
		}
	}
	return out
}()

// isKnownField reports whether key is a canonical name or an alias, in any
// letter case; only those are kept by Decode. A template's "Price" or
// "Test" is the trader's price or test flag: ignored as unknown, the
// order would have been sent at market or live, and an ignored "Comment"
// would have merged two orders that only it told apart.
func isKnownField(key string) bool {
	return knownKeys[key] || foldedKeys[foldKey(key)] != ""
}

// foldKey lower-cases key's ASCII letters only: a field's keys are ASCII,
// and Unicode folding would read the Kelvin sign in "tic\u212Aer" as a k.
func foldKey(key string) string {
	for i := 0; i < len(key); i++ {
		if c := key[i]; 'A' <= c && c <= 'Z' {
			b := []byte(key)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return key
}

// keysOf lists the keys of r that carry field: its aliases as spelt in
// fieldAliases, then, sorted, any other letter case of them that r holds
// (noteOtherCase).
func (r *Raw) keysOf(field string) []string {
	keys := aliasesOf(field)
	other := r.otherCase[field]
	if other == nil {
		return keys
	}
	return append(slices.Clip(keys), other...)
}

// fieldValue returns the value of a field given under any of its aliases.
// Aliases given with the same meaning (after normalisation by parse) are
// accepted; with different meanings the sender's intent is ambiguous, and a
// trading system must not guess, so it is an error naming both keys. A JSON
// null counts as not given.
func fieldValue[T any](r *Raw, field string, parse func(value) (T, string), equal func(a, b T) bool) (T, bool, error) {
	var (
		out     T
		found   bool
		foundAs string
	)
	for _, key := range r.keysOf(field) {
		v, ok := r.fields[key]
		if !ok || v.kind == kindNull {
			continue
		}
		got, msg := parse(v)
		if msg != "" {
			return out, false, fieldError(field, msg, v)
		}
		if found && !equal(out, got) {
			return out, false, fieldError(field, "given as both "+strconv.Quote(foundAs)+" and "+strconv.Quote(key)+" with different values", v)
		}
		if !found {
			out, found, foundAs = got, true, key
		}
	}
	return out, found, nil
}

// fieldError builds a validation error located at the offending value.
func fieldError(field, msg string, v value) *Error {
	return &Error{Field: field, Msg: msg, Line: v.line, Column: v.col, Offset: v.offset}
}
