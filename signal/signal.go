package signal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// Limits of the text fields.
const (
	maxExchangeLen = 32
	maxSymbolLen   = 32
	maxKeyLen      = 255
	maxTextLen     = 256
	maxLeverage    = 125
	// MaxAccounts bounds a fan-out: each account is a claim, a venue call
	// and a row, dispatched at once.
	MaxAccounts = 10
)

// minTimestamp (2000-01-01T00:00:00Z) and maxTimestamp
// (9999-12-31T23:59:59.999Z) bound accepted timestamps, in Unix ms. The
// lower bound catches the common mistake of sending Unix seconds where
// milliseconds are expected (1714564800 would otherwise be read as January
// 1970 and still derive a trace ID, silently).
const (
	minTimestamp = 946684800000
	maxTimestamp = 253402300799999
)

// Quantity types: what a signal's quantity counts.
const (
	// QuantityBase is an amount of the base asset (or contracts' base
	// value): the default.
	QuantityBase = "base"
	// QuantityQuote is an amount of the quote currency (100 USDT): the
	// base quantity is that over the venue's current price.
	QuantityQuote = "quote"
	// QuantityPercentOfBalance is a percentage (0–100] of the free quote
	// balance, for an entry.
	QuantityPercentOfBalance = "percent_of_balance"
	// QuantityPercentOfPosition is a percentage (0–100] of the position,
	// for a close: a reduce-only order for that share of it.
	QuantityPercentOfPosition = "percent_of_position"
)

// ActionCancel cancels the symbol's open orders that hoox placed; it
// places nothing.
const ActionCancel = "cancel"

// Order types.
const (
	OrderTypeMarket = "market"
	OrderTypeLimit  = "limit"
)

// Signal is a validated, normalised trading signal. Two bodies that mean the
// same order produce equal Signals (and equal Canonical bytes), whatever
// aliases, letter case, key order or number formatting they used.
type Signal struct {
	// Exchange is the venue (or account), lower-cased, 1–32 of
	// [a-z0-9_-]. It may be empty when Accounts names the accounts; for
	// the signal one account executes (ForAccount) it is that account.
	Exchange string
	// Accounts are the accounts named by "account" (one) or "accounts"
	// (a list of 1–MaxAccounts, no repeats), lower-cased, in the order
	// sent; nil when neither was given (Exchange's default account).
	Accounts []string
	// FanOut is true when the accounts came as a list: the answer then
	// lists each account's outcome.
	FanOut bool
	// Symbol is the instrument, 1–32 of A-Za-z0-9._:/-, upper-cased.
	Symbol string
	// Action is one of buy, sell, long, short, close_long, close_short,
	// close, lower-cased — or cancel (ActionCancel), which places nothing
	// and has no quantity, price, order type or leverage.
	Action string
	// Side is derived from Action: "buy" or "sell", or "" for close, where
	// the venue decides from the open position.
	Side string
	// ReduceOnly is true for the close actions, so a close can never open or
	// flip a position.
	ReduceOnly bool
	// Quantity is exact and greater than zero: an amount of what
	// QuantityType counts (for a percentage, 0 < Quantity ≤ 100).
	Quantity decimal.Decimal
	// QuantityType is QuantityBase (the default), QuantityQuote,
	// QuantityPercentOfBalance (entries only) or
	// QuantityPercentOfPosition (closes only). A quantity sent as "50%"
	// is a percentage of the balance for an entry, of the position for a
	// close (a partial exit included, see positionAction); a close from
	// sentiment flat is the whole position (QuantityBase) unless
	// percent_of_position was named. The venue resolves it to a base
	// quantity once, before the intent is written; the signal (and so its
	// fingerprint) keeps what was asked.
	QuantityType string
	// Price is optional and, when valid, greater than zero.
	Price decimal.NullDecimal
	// OrderType is "market" or "limit"; it defaults to limit when a price is
	// given and to market otherwise.
	OrderType string
	// Leverage is 1–125, or 0 when not given.
	Leverage int
	// Timestamp is the sender's time of the signal in UTC, at millisecond
	// precision, or the zero time when not given. It makes the trace ID
	// derivable.
	Timestamp time.Time
	// ClientKey is the body's trace_id (or an alias): 1–255 printable
	// characters, or "" when not given.
	ClientKey string
	// Test marks a paper/testnet signal; live and test trace IDs never
	// collide.
	Test bool
	// Strategy is free text for the audit, at most 256 characters.
	Strategy string
	// Comment is free text for the audit, at most 256 characters.
	Comment string
	// TakeProfit, StopLoss and TrailingStop are exits attached to an
	// entry, nil when not given; a close never carries them. A price
	// target is on the profitable (take-profit) or losing (stop-loss) side
	// of a quoted price; a percent target is resolved by the venue from
	// the entry's price once, before the intent is written.
	TakeProfit   *Target
	StopLoss     *Target
	TrailingStop *Target
	// askedAction and askedQuantityType, when set, are the action and
	// quantity type as read before the strategy's position after the order
	// (market_position, sentiment) changed them (positionAction, a flat
	// close's whole position): Canonical keeps them, so the signal's
	// fingerprint, and the trace ID derived from it, stay what they were
	// before hoox read the position that way — a sender's resend landing
	// on a replica of either release during a rolling deploy finds the
	// same trace, not a second one that would place a second order.
	askedAction, askedQuantityType string
	// askedQuantity, when askedAction is set, is the quantity as sent
	// (a flat limit close resolves it to 100 % of the position).
	askedQuantity decimal.Decimal
	// sentiment is the strategy's position once the order filled, long or
	// short; "" when not sent, for flat (the canonical action is close
	// already) and for a cancel, which does not read it. Canonical keeps
	// it: askedAction keeps a sell leaving the
	// strategy long and one leaving it short the same "sell", and without
	// their positions two such orders fired with one order ID and size in
	// one second (or one dedup window) would be one signal, the second
	// answered as a duplicate and never placed.
	sentiment string
}

// Secret returns the webhook secret given as "secret", "apiKey" or
// "passphrase", or "" when there is none. It returns "" as well when a
// secret field is not a string or when aliases disagree, so an ambiguous
// body never authenticates on a guess; Signal then reports why.
func (r *Raw) Secret() string {
	s, _, err := fieldValue(r, FieldSecret, stringValue, equalComparable[string])
	if err != nil {
		return ""
	}
	return s
}

// Signal validates and normalises the fields. The first broken rule, in
// canonical field order, is returned as an *Error whose Field is the
// canonical name and whose Msg is the rule. Unknown fields were already
// dropped by Decode.
func (r *Raw) Signal() (Signal, error) {
	var s Signal
	if _, _, err := fieldValue(r, FieldSecret, stringValue, equalComparable[string]); err != nil {
		return Signal{}, err
	}

	var err error
	if s.Accounts, s.FanOut, err = accounts(r); err != nil {
		return Signal{}, err
	}
	if s.Exchange, _, err = fieldValue(r, FieldExchange, parseExchange, equalComparable[string]); err != nil {
		return Signal{}, err
	}
	if s.Exchange == "" && s.Accounts == nil {
		return Signal{}, &Error{Field: FieldExchange, Msg: "is required (or name the account or accounts)"}
	}
	if s.Symbol, err = required(r, FieldSymbol, parseSymbol); err != nil {
		return Signal{}, err
	}
	sentiment, _, sentimentErr := fieldValue(r, FieldSentiment, parseSentiment, equalComparable[string])
	action, found, err := fieldValue(r, FieldAction, parseAction, equalComparable[string])
	cancel := err == nil && found && action == ActionCancel
	switch {
	case sentimentErr != nil && !cancel:
		// A cancel does not read the position: not refused for it.
		return Signal{}, sentimentErr
	case err != nil:
		return Signal{}, err
	case sentiment == "flat" && !cancel:
		// TradersPost's sentiment "flat" and TradingView's
		// {{strategy.market_position}} "flat" say the strategy ends flat,
		// whatever the order's action (a sell that closes a long): close
		// the position. Not a cancel's: a cancel names no order, and a
		// strategy that cancels its resting entry while flat renders
		// "flat" too — read as a close it would sell the position.
		action = "close"
	case !found:
		return Signal{}, &Error{Field: FieldAction, Msg: "is required"}
	}
	s.Action = action
	if s.Action != ActionCancel {
		// A cancel names no order: its quantity, price, order type and
		// leverage are not read (a template that carries them anyway is
		// not refused for it).
		if err := r.orderFields(&s, sentiment); err != nil {
			return Signal{}, err
		}
		if sentiment != "flat" {
			// flat is in the canonical action already (close).
			s.sentiment = sentiment
		}
	}
	s.Side, s.ReduceOnly = sideOf(s.Action)
	if s.Timestamp, _, err = fieldValue(r, FieldTimestamp, parseTimestamp, time.Time.Equal); err != nil {
		return Signal{}, err
	}
	if s.ClientKey, _, err = fieldValue(r, FieldTraceID, parseClientKey, equalComparable[string]); err != nil {
		return Signal{}, err
	}
	if s.Test, _, err = fieldValue(r, FieldTest, parseBool, equalComparable[bool]); err != nil {
		return Signal{}, err
	}
	if s.Strategy, _, err = fieldValue(r, FieldStrategy, parseText, equalComparable[string]); err != nil {
		return Signal{}, err
	}
	if s.Comment, _, err = fieldValue(r, FieldComment, parseText, equalComparable[string]); err != nil {
		return Signal{}, err
	}
	if s.Action == ActionCancel {
		// Nor its exits: a cancel sent from an entry's template is not
		// refused for a take_profit it never reads (nor for one the venue
		// could not take), which would leave the entry resting.
		return s, nil
	}
	if err := attachments(r, &s); err != nil {
		return Signal{}, err
	}
	return s, nil
}

// orderFields reads the fields that describe the order itself: quantity and
// its type, price, order type and leverage. sentiment, the strategy's
// position once the order filled, may change the action (positionAction).
func (r *Raw) orderFields(s *Signal, sentiment string) error {
	qty, found, err := fieldValue(r, FieldQuantity, parseQuantity, quantity.equal)
	if err != nil {
		return err
	}
	if !found {
		return &Error{Field: FieldQuantity, Msg: "is required"}
	}
	s.Quantity = qty.d
	qtype, typed, err := fieldValue(r, FieldQuantityType, parseQuantityType, equalComparable[string])
	if err != nil {
		return err
	}
	asked := s.Action
	if s.Action, err = positionAction(r, s.Action, sentiment, qty, qtype); err != nil {
		return err
	}
	defer func() {
		// What the fingerprint keeps (askedAction): the action and the
		// quantity type as releases before the position-aware reading
		// derived them, whenever this reading differs.
		t := askedQuantityType(asked, qty, qtype, typed)
		if asked != s.Action || t != s.QuantityType || !qty.d.Equal(s.Quantity) {
			s.askedAction, s.askedQuantityType, s.askedQuantity = asked, t, qty.d
		}
	}()
	// Read before the quantity type is settled (a flat close with a price
	// is sized differently); its error still comes after the quantity
	// type's, in canonical field order.
	price, priced, priceErr := fieldValue(r, FieldPrice, positiveDecimal, decimal.Decimal.Equal)
	switch {
	case sentiment == "flat" && qtype != QuantityPercentOfPosition && priced:
		// The same for a limit close, sized as 100 % of the position: a
		// venue's limit close (paper's) rests for its quantity, and the
		// template's "25%" must not become 25 coins.
		s.QuantityType, s.Quantity = QuantityPercentOfPosition, decimal.NewFromInt(100)
	case sentiment == "flat" && qtype != QuantityPercentOfPosition:
		// The strategy is flat: nothing is meant to stay open, whatever
		// share or amount the template sends with every order ("25%" of
		// the balance for its entries). Only a share asked for by name
		// (percent_of_position) closes less than the whole position.
		s.QuantityType = QuantityBase
	default:
		if s.QuantityType, err = quantityType(r, s.Action, qty, qtype, typed); err != nil {
			return err
		}
	}

	if priceErr != nil {
		return priceErr
	}
	s.Price = decimal.NullDecimal{Decimal: price, Valid: priced}

	orderType, found, err := fieldValue(r, FieldOrderType, parseOrderType, equalComparable[string])
	if err != nil {
		return err
	}
	switch {
	case !found && s.Price.Valid:
		orderType = OrderTypeLimit
	case !found:
		orderType = OrderTypeMarket
	case orderType == OrderTypeLimit && !s.Price.Valid:
		return fieldError(FieldOrderType, "limit order requires a price", r.firstValue(FieldOrderType))
	}
	s.OrderType = orderType

	if s.Leverage, _, err = fieldValue(r, FieldLeverage, parseLeverage, equalComparable[int]); err != nil {
		return err
	}
	return nil
}

// firstValue returns the first non-null value of a field, for locating an
// error that involves the field as a whole.
func (r *Raw) firstValue(field string) value {
	for _, key := range r.keysOf(field) {
		if v, ok := r.fields[key]; ok && v.kind != kindNull {
			return v
		}
	}
	return value{}
}

// required reads a string field that must be present.
func required(r *Raw, field string, parse func(value) (string, string)) (string, error) {
	s, found, err := fieldValue(r, field, parse, equalComparable[string])
	if err != nil {
		return "", err
	}
	if !found {
		return "", &Error{Field: field, Msg: "is required"}
	}
	return s, nil
}

func equalComparable[T comparable](a, b T) bool { return a == b }

// stringValue accepts only a JSON string.
func stringValue(v value) (string, string) {
	if v.kind != kindString {
		return "", "must be a string"
	}
	return v.text, ""
}

// asciiCharset checks s against a byte predicate. Checking bytes (not
// runes) against an ASCII set is what makes case mapping safe afterwards:
// strings.ToLower would turn the Kelvin sign into "k" and let a look-alike
// through.
func asciiCharset(s string, ok func(c byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func parseExchange(v value) (string, string) {
	s, msg := stringValue(v)
	if msg != "" {
		return "", msg
	}
	return NormalizeExchange(s)
}

// NormalizeExchange applies a signal's rule for an exchange or account
// name and returns it lower-case, as signals store it; msg says what is
// wrong when s breaks the rule. Admin input that names an exchange uses it
// so it finds the rows signals wrote.
func NormalizeExchange(s string) (name, msg string) {
	if s == "" || len(s) > maxExchangeLen || !asciiCharset(s, func(c byte) bool { return isAlnum(c) || c == '_' || c == '-' }) {
		return "", "must be 1–32 of a-z, 0-9, _ and -"
	}
	return strings.ToLower(s), ""
}

// accounts reads "account" or "accounts" (not both): names of the same
// form as exchange, at most MaxAccounts, none twice.
func accounts(r *Raw) ([]string, bool, error) {
	one, foundOne, err := fieldValue(r, FieldAccount, parseExchange, equalComparable[string])
	if err != nil {
		return nil, false, err
	}
	list, foundList, err := fieldValue(r, FieldAccounts, parseAccounts, slices.Equal[[]string])
	switch {
	case err != nil:
		return nil, false, err
	case foundOne && foundList:
		return nil, false, fieldError(FieldAccounts, "send account or accounts, not both", r.firstValue(FieldAccounts))
	case foundOne:
		return []string{one}, false, nil
	case foundList:
		return list, true, nil
	}
	return nil, false, nil
}

// parseAccounts accepts a list of 1–MaxAccounts account names, each once.
func parseAccounts(v value) ([]string, string) {
	if v.kind != kindArray {
		return nil, "must be a list of account names"
	}
	if len(v.items) == 0 || len(v.items) > MaxAccounts {
		return nil, fmt.Sprintf("must name 1–%d accounts", MaxAccounts)
	}
	out := make([]string, 0, len(v.items))
	for _, it := range v.items {
		name, msg := parseExchange(it)
		if msg != "" {
			return nil, "each account " + msg
		}
		if slices.Contains(out, name) {
			return nil, fmt.Sprintf("names %q twice", name)
		}
		out = append(out, name)
	}
	return out, ""
}

func parseSymbol(v value) (string, string) {
	s, msg := stringValue(v)
	if msg != "" {
		return "", msg
	}
	return NormalizeSymbol(s)
}

// NormalizeSymbol applies a signal's rule for a symbol and returns it
// upper-case, as signals store it; msg says what is wrong when s breaks
// the rule.
func NormalizeSymbol(s string) (symbol, msg string) {
	if s == "" || len(s) > maxSymbolLen || !asciiCharset(s, func(c byte) bool { return isAlnum(c) || strings.IndexByte("._:/-", c) >= 0 }) {
		return "", "must be 1–32 of A-Z, a-z, 0-9 and . _ : / -"
	}
	return strings.ToUpper(s), ""
}

func parseAction(v value) (string, string) {
	s, msg := stringValue(v)
	if msg != "" {
		return "", msg
	}
	const rule = "must be one of buy, sell, long, short, close_long, close_short, close, cancel"
	if !asciiCharset(s, func(c byte) bool { return c < utf8.RuneSelf }) {
		return "", rule
	}
	switch a := strings.ToLower(s); a {
	case "buy", "sell", "long", "short", "close_long", "close_short", "close", ActionCancel:
		return a, ""
	}
	return "", rule
}

// parseSentiment accepts TradersPost's sentiment (bullish, bearish, flat)
// and TradingView's market position (long, short, flat), any case: the
// strategy's position once the order filled. flat makes the signal a
// close; long and short change the action only where it would otherwise
// trade against what the strategy holds (positionAction).
func parseSentiment(v value) (string, string) {
	s, msg := stringValue(v)
	if msg != "" {
		return "", msg
	}
	const rule = "must be one of long, short, flat, bullish, bearish"
	if !asciiCharset(s, func(c byte) bool { return c < utf8.RuneSelf }) {
		return "", rule
	}
	switch a := strings.ToLower(s); a {
	case "long", "bullish":
		return "long", ""
	case "short", "bearish":
		return "short", ""
	case "flat":
		return a, ""
	}
	return "", rule
}

// quantity is a parsed quantity: a decimal, or a percentage ("50%").
type quantity struct {
	d       decimal.Decimal
	percent bool
}

func (q quantity) equal(o quantity) bool { return q.percent == o.percent && q.d.Equal(o.d) }

// parseQuantity accepts a positive decimal, or Alertatron's percentage: a
// string "50%" (0 < p ≤ 100).
func parseQuantity(v value) (quantity, string) {
	if v.kind == kindString && strings.HasSuffix(v.text, "%") {
		d, msg := parseDecimal(strings.TrimSuffix(v.text, "%"))
		if msg != "" || d.Sign() <= 0 || d.GreaterThan(decimal.NewFromInt(100)) {
			return quantity{}, "a percentage must be greater than 0 and at most 100 (\"50%\")"
		}
		return quantity{d: d, percent: true}, ""
	}
	d, msg := positiveDecimal(v)
	return quantity{d: d}, msg
}

// positionAction is the action a sell or buy is once the strategy's
// position after it (sentiment) is known; other actions, and a signal
// without sentiment, keep theirs. The strategy's own orders need no other
// template field:
//   - sell leaving it short opens (or adds to) a short: the action short,
//     which a spot venue refuses (a sell there would sell coins the
//     account holds instead) and a derivatives venue places as a sell;
//   - sell leaving it long, or buy leaving it short, is a partial exit.
//     Sized by a percentage (a template that sends "25%" with every
//     order) it closes that share of the position (close_long or
//     close_short, percent_of_position, reduce-only): a share of the
//     balance could take more than the position and open the other side.
//     percent_of_balance named as such is refused for it; a base
//     quantity is the strategy's own contracts and stays a sell or buy.
func positionAction(r *Raw, action, sentiment string, q quantity, qtype string) (string, error) {
	percent := q.percent || qtype == QuantityPercentOfBalance || qtype == QuantityPercentOfPosition
	reduces := ""
	switch {
	case sentiment == "short" && action == "sell":
		return "short", nil
	case sentiment == "long" && action == "sell" && percent:
		reduces = "close_long"
	case sentiment == "short" && action == "buy" && percent:
		reduces = "close_short"
	default:
		return action, nil
	}
	if qtype == QuantityPercentOfBalance {
		return "", fieldError(FieldQuantityType, fmt.Sprintf(
			"a %s that leaves the strategy %s (sentiment) reduces its position: size it with percent_of_position, not percent_of_balance, which could open the other side",
			action, sentiment), r.firstValue(FieldQuantityType))
	}
	return reduces, nil
}

// askedQuantityType is the quantity type read for action without the
// strategy's position: the named type, else a percentage of the position
// for a close and of the balance for anything else, else base. It is
// quantityType's reading before its checks.
func askedQuantityType(action string, q quantity, t string, found bool) string {
	closing := action == "close" || action == "close_long" || action == "close_short"
	switch {
	case found:
		return t
	case q.percent && closing:
		return QuantityPercentOfPosition
	case q.percent:
		return QuantityPercentOfBalance
	}
	return QuantityBase
}

// quantityType checks quantity_type (t, when found) against the action
// and the quantity: a percentage is of the balance for an entry and of
// the position for a close, and never above 100.
func quantityType(r *Raw, action string, q quantity, t string, found bool) (string, error) {
	closing := action == "close" || action == "close_long" || action == "close_short"
	t = askedQuantityType(action, q, t, found)
	percent := t == QuantityPercentOfBalance || t == QuantityPercentOfPosition
	switch {
	case q.percent && !percent:
		return "", fieldError(FieldQuantity, "is a percentage, but quantity_type is "+t, r.firstValue(FieldQuantity))
	case percent && q.d.GreaterThan(decimal.NewFromInt(100)):
		return "", fieldError(FieldQuantity, "is a percentage for "+t+": at most 100", r.firstValue(FieldQuantity))
	case t == QuantityPercentOfPosition && !closing:
		return "", fieldError(FieldQuantityType, "percent_of_position sizes an exit: use action close, close_long or close_short", r.firstValue(FieldQuantityType))
	case (t == QuantityPercentOfBalance || t == QuantityQuote) && closing:
		return "", fieldError(FieldQuantityType, t+" sizes an entry; a close is sized by its position (base, or percent_of_position)", r.firstValue(FieldQuantityType))
	}
	return t, nil
}

func parseQuantityType(v value) (string, string) {
	s, msg := stringValue(v)
	if msg != "" {
		return "", msg
	}
	const rule = "must be one of base, quote, percent_of_balance, percent_of_position"
	if !asciiCharset(s, func(c byte) bool { return c < utf8.RuneSelf }) {
		return "", rule
	}
	switch t := strings.ToLower(s); t {
	case QuantityBase, QuantityQuote, QuantityPercentOfBalance, QuantityPercentOfPosition:
		return t, ""
	case "fixed_quantity", "contracts":
		// TradersPost's fixed_quantity is a base amount. Its
		// dollar_amount, percent_of_equity and risk_dollar_amount are not
		// taken: hoox would have to guess (a quote currency that is not
		// dollars; equity that is not the free balance; a stop-loss hoox
		// does not place).
		return QuantityBase, ""
	}
	return "", rule
}

// sideOf maps an action to the order side. Closing a short buys, closing a
// long sells; a bare close leaves the side to the venue, which knows the
// position.
func sideOf(action string) (side string, reduceOnly bool) {
	switch action {
	case "buy", "long":
		return "buy", false
	case "sell", "short":
		return "sell", false
	case "close_short":
		return "buy", true
	case "close_long":
		return "sell", true
	case "close":
		return "", true
	}
	return "", false
}

func parseOrderType(v value) (string, string) {
	s, msg := stringValue(v)
	if msg != "" {
		return "", msg
	}
	if asciiCharset(s, func(c byte) bool { return c < utf8.RuneSelf }) {
		switch t := strings.ToLower(s); t {
		case OrderTypeMarket, OrderTypeLimit:
			return t, ""
		}
	}
	return "", "must be market or limit"
}

func parseLeverage(v value) (int, string) {
	const rule = "must be an integer from 1 to 125"
	d, msg := decimalValue(v)
	if msg == msgNumberOrText {
		return 0, msg
	}
	if msg != "" || !d.IsInteger() || d.LessThan(decimal.NewFromInt(1)) || d.GreaterThan(decimal.NewFromInt(maxLeverage)) {
		return 0, rule
	}
	return int(d.IntPart()), ""
}

// parseTimestamp accepts RFC 3339 (what TradingView's {{timenow}} gives) or
// Unix milliseconds as a JSON number or numeric string. It is kept at
// millisecond precision in UTC because the canonical form stores Unix ms:
// two timestamps that store the same must be the same signal.
func parseTimestamp(v value) (time.Time, string) {
	const rule = "must be an RFC 3339 time or Unix milliseconds"
	var ms int64
	switch {
	case v.kind == kindString && strings.ContainsAny(v.text, "Tt"):
		t, err := time.Parse(time.RFC3339Nano, v.text)
		if err != nil {
			return time.Time{}, rule
		}
		ms = t.UnixMilli()
	case v.kind == kindString || v.kind == kindNumber:
		d, msg := parseDecimal(v.text)
		if msg != "" || !d.IsInteger() {
			return time.Time{}, rule
		}
		if d.LessThan(decimal.NewFromInt(minTimestamp)) {
			// Also catches seconds sent instead of milliseconds.
			return time.Time{}, "must be Unix milliseconds after 2000-01-01"
		}
		if d.GreaterThan(decimal.NewFromInt(maxTimestamp)) {
			return time.Time{}, "must be before the year 10000"
		}
		ms = d.IntPart()
	default:
		return time.Time{}, rule
	}
	if ms < minTimestamp {
		return time.Time{}, "must be after 2000-01-01"
	}
	return time.UnixMilli(ms).UTC(), ""
}

// validKey applies the client-key rule: 1–255 printable characters. Control
// characters and invisible format characters (category Cf: right-to-left
// marks, zero-width joiners, …) are refused because they make two keys look
// identical to an operator while they dedup differently.
func validKey(s string) string {
	if s == "" || !utf8.ValidString(s) || utf8.RuneCountInString(s) > maxKeyLen {
		return "must be 1–255 printable characters"
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return "must be 1–255 printable characters (no control or invisible characters)"
		}
	}
	return ""
}

func parseClientKey(v value) (string, string) {
	s, msg := stringValue(v)
	if msg != "" {
		return "", msg
	}
	if msg := validKey(s); msg != "" {
		return "", msg
	}
	return s, ""
}

// parseBool accepts JSON booleans and, because templates often quote every
// placeholder, the strings "true" and "false".
func parseBool(v value) (bool, string) {
	switch {
	case v.kind == kindBool:
		return v.text == "true", ""
	case v.kind == kindString && v.text == "true":
		return true, ""
	case v.kind == kindString && v.text == "false":
		return false, ""
	}
	return false, "must be true or false"
}

// parseText applies the rule for audit text: at most 256 characters and no
// control characters, so a stored strategy name cannot rewrite an
// operator's terminal or forge log lines.
func parseText(v value) (string, string) {
	s, msg := stringValue(v)
	if msg != "" {
		return "", msg
	}
	if msg := CheckText(s); msg != "" {
		return "", msg
	}
	return s, ""
}

// CheckText applies a signal's rule for audit text (strategy, comment) to
// s: valid UTF-8, at most 256 characters and no control characters. It
// returns "" when s passes, else what is wrong. Admin input stored beside
// signals' text (reasons, a ledger's strategy) follows the same rule.
func CheckText(s string) string {
	if !utf8.ValidString(s) {
		// Decode refuses invalid UTF-8 before a signal's text gets here.
		return "must be valid UTF-8"
	}
	if utf8.RuneCountInString(s) > maxTextLen {
		return "must be at most 256 characters"
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "must not contain control characters"
		}
	}
	return ""
}

// canonicalSignal fixes the key order and types of Canonical. It lists
// every field of the normalised signal except the secret (which is never
// stored) and the client key (which names the signal rather than being
// part of it: the same key with a different canonical form is a key reuse).
// Side and ReduceOnly are left out because they follow from action.
type canonicalSignal struct {
	Exchange string `json:"exchange"`
	Symbol   string `json:"symbol"`
	Action   string `json:"action"`
	// Sentiment is left out when not sent, so the fingerprint of every
	// signal without it stays what it was.
	Sentiment string `json:"sentiment,omitempty"`
	Quantity  string `json:"quantity"`
	// QuantityType is left out for base, so the fingerprint of every
	// signal that existed before it stays what it was.
	QuantityType string  `json:"quantity_type,omitempty"`
	Price        *string `json:"price"`
	OrderType    string  `json:"order_type"`
	Leverage     *int    `json:"leverage"`
	Timestamp    *int64  `json:"timestamp"`
	Test         bool    `json:"test"`
	Strategy     string  `json:"strategy"`
	Comment      string  `json:"comment"`
	// The attached exits are left out when not given, so the fingerprint
	// of every signal without them stays what it was.
	TakeProfit   any `json:"take_profit,omitempty"`
	StopLoss     any `json:"stop_loss,omitempty"`
	TrailingStop any `json:"trailing_stop,omitempty"`
}

// Canonical returns the canonical JSON of the normalised signal: fixed key
// order, decimals as minimal strings ("1.5" for 1.50), the timestamp as Unix
// milliseconds, absent optional fields as null. It is what the fingerprint
// hashes and what the database stores, so it never contains the secret. It
// is itself a valid signal body that decodes to the same Canonical.
func (s Signal) Canonical() []byte {
	qty := s.Quantity.String()
	if s.Action == ActionCancel {
		// A cancel has no quantity (nor order type, price or leverage).
		qty = ""
	}
	action, qtype := s.Action, s.QuantityType
	if s.askedAction != "" {
		action, qtype = s.askedAction, s.askedQuantityType
		if s.Action != ActionCancel {
			qty = s.askedQuantity.String()
		}
	}
	if qtype == QuantityBase {
		qtype = ""
	}
	c := canonicalSignal{
		Exchange:     s.Exchange,
		Symbol:       s.Symbol,
		Action:       action,
		Sentiment:    s.sentiment,
		Quantity:     qty,
		OrderType:    s.OrderType,
		QuantityType: qtype,
		Test:         s.Test,
		Strategy:     s.Strategy,
		Comment:      s.Comment,
	}
	if s.Price.Valid {
		p := s.Price.Decimal.String()
		c.Price = &p
	}
	if s.Leverage != 0 {
		l := s.Leverage
		c.Leverage = &l
	}
	if !s.Timestamp.IsZero() {
		ms := s.Timestamp.UnixMilli()
		c.Timestamp = &ms
	}
	if s.TakeProfit != nil {
		c.TakeProfit = s.TakeProfit.canonical()
	}
	if s.StopLoss != nil {
		c.StopLoss = s.StopLoss.canonical()
	}
	if s.TrailingStop != nil {
		c.TrailingStop = s.TrailingStop.canonical()
	}
	b, err := json.Marshal(c)
	if err != nil {
		// Strings, ints and bools always marshal; reaching this is a bug in
		// this file, not a bad request.
		panic("signal: canonical marshal: " + err.Error())
	}
	return b
}

// Fingerprint returns the lower-case hex SHA-256 of Canonical. It is the
// derived and window trace key, and it is stored with every claimed trace
// so a reused client key with a different signal is detected.
func (s Signal) Fingerprint() string {
	sum := sha256.Sum256(s.Canonical())
	return hex.EncodeToString(sum[:])
}
