package signal

import (
	"math/big"
	"strings"

	"github.com/shopspring/decimal"
)

// Bounds of numeric(38,18), the column type quantities and prices are stored
// in: a value that does not fit must be refused here, not rounded by
// Postgres after the order went out.
const (
	maxIntDigits  = 20
	maxFracDigits = 18
	// maxExpDigits bounds the exponent before it is converted, so
	// "1e999999999999" is refused without building a huge number.
	maxExpDigits = 9
)

// Messages for the numeric rules, shared so the same rule reads the same
// whichever field broke it.
const (
	msgNotDecimal   = "must be a decimal number"
	msgTooManyInt   = "must have at most 20 integer digits"
	msgTooManyFrac  = "must have at most 18 decimal places"
	msgNotPositive  = "must be greater than 0"
	msgNumberOrText = "must be a number or a numeric string"
)

// parseDecimal parses the text of a JSON number or of a numeric string into
// an exact decimal, never through float64. It accepts an optional '-', digits
// with an optional fraction (".5" and "5." too, since they arrive in
// strings) and an optional exponent, and refuses anything outside
// numeric(38,18) before allocating: the coefficient is at most 38
// significant digits once bounds pass.
func parseDecimal(s string) (decimal.Decimal, string) {
	neg := false
	if strings.HasPrefix(s, "-") {
		neg = true
		s = s[1:]
	}
	mant, exp, hasExp := s, "", false
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp, hasExp = s[:i], s[i+1:], true
	}
	intPart, fracPart := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, fracPart = mant[:i], mant[i+1:]
	}
	if intPart == "" && fracPart == "" || !allDigits(intPart) || !allDigits(fracPart) {
		return decimal.Decimal{}, msgNotDecimal
	}
	expNeg := false
	if hasExp {
		if strings.HasPrefix(exp, "+") || strings.HasPrefix(exp, "-") {
			expNeg = exp[0] == '-'
			exp = exp[1:]
		}
		if exp == "" || !allDigits(exp) {
			return decimal.Decimal{}, msgNotDecimal
		}
	}

	// Significant digits: coefficient = intPart+fracPart without leading
	// zeros, scale adjusted for trailing zeros. Its length is bounded by the
	// body, and it is only converted once the bounds below hold.
	digits := strings.TrimLeft(intPart+fracPart, "0")
	if digits == "" {
		return decimal.Decimal{}, ""
	}
	trimmed := strings.TrimRight(digits, "0")
	exp10 := int64(len(digits)-len(trimmed)) - int64(len(fracPart))

	exp = strings.TrimLeft(exp, "0")
	if len(exp) > maxExpDigits {
		if expNeg {
			return decimal.Decimal{}, msgTooManyFrac
		}
		return decimal.Decimal{}, msgTooManyInt
	}
	var e int64
	for i := 0; i < len(exp); i++ {
		e = e*10 + int64(exp[i]-'0')
	}
	if expNeg {
		e = -e
	}
	exp10 += e

	if intDigits := int64(len(trimmed)) + exp10; intDigits > maxIntDigits {
		return decimal.Decimal{}, msgTooManyInt
	}
	if -exp10 > maxFracDigits {
		return decimal.Decimal{}, msgTooManyFrac
	}
	coef, ok := new(big.Int).SetString(trimmed, 10)
	if !ok {
		return decimal.Decimal{}, msgNotDecimal
	}
	if neg {
		coef.Neg(coef)
	}
	return decimal.NewFromBigInt(coef, int32(exp10)), ""
}

// allDigits reports whether s is only ASCII digits (true for "").
func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// decimalValue reads a JSON number or numeric string as a decimal.
func decimalValue(v value) (decimal.Decimal, string) {
	switch v.kind {
	case kindNumber, kindString:
		return parseDecimal(v.text)
	default:
		return decimal.Decimal{}, msgNumberOrText
	}
}

// positiveDecimal applies the quantity and price rule: exact, in bounds,
// greater than zero.
func positiveDecimal(v value) (decimal.Decimal, string) {
	d, msg := decimalValue(v)
	if msg != "" {
		return d, msg
	}
	if d.Sign() <= 0 {
		return d, msgNotPositive
	}
	return d, ""
}
