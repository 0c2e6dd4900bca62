package signal

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/shopspring/decimal"
)

// Target is the trigger of an exit attached to an entry (take_profit,
// stop_loss, trailing_stop). Exactly one of its fields is valid.
type Target struct {
	// Price is an absolute trigger price (take_profit, stop_loss):
	// "take_profit": "71000".
	Price decimal.NullDecimal
	// Percent is a distance from the entry's price in percent, 0 < p < 100:
	// {"percent": 2} or "2%". A take-profit is that far in the position's
	// favour, a stop-loss that far against it, a trailing stop trails by
	// that share of the price.
	Percent decimal.NullDecimal
	// Distance is a trailing stop's distance in price units (quote per
	// base): {"distance": 500}.
	Distance decimal.NullDecimal
}

// Equal reports whether t and o ask for the same trigger.
func (t Target) Equal(o Target) bool {
	eq := func(a, b decimal.NullDecimal) bool {
		return a.Valid == b.Valid && (!a.Valid || a.Decimal.Equal(b.Decimal))
	}
	return eq(t.Price, o.Price) && eq(t.Percent, o.Percent) && eq(t.Distance, o.Distance)
}

// canonical is the target's form in Canonical: the price as a string, or
// an object with the percent or distance. It decodes to the same Target.
func (t Target) canonical() any {
	switch {
	case t.Price.Valid:
		return t.Price.Decimal.String()
	case t.Percent.Valid:
		return map[string]string{"percent": t.Percent.Decimal.String()}
	default:
		return map[string]string{"distance": t.Distance.Decimal.String()}
	}
}

var hundredPercent = decimal.NewFromInt(100)

// parsePercent applies the percent rule of an attached exit: 0 < p < 100
// (a stop 100 % away from the entry is a price of zero).
func parsePercent(v value) (decimal.NullDecimal, string) {
	d, msg := decimalValue(v)
	if msg != "" {
		return decimal.NullDecimal{}, "percent " + msg
	}
	if d.Sign() <= 0 || d.GreaterThanOrEqual(hundredPercent) {
		return decimal.NullDecimal{}, "percent must be greater than 0 and less than 100"
	}
	return decimal.NullDecimal{Decimal: d, Valid: true}, ""
}

// targetKeys lists the keys an attachment's object may hold, per field,
// and what each sets. TradersPost's takeProfit.limitPrice,
// stopLoss.stopPrice and trailPercent/trailPrice are taken as aliases.
func targetKeys(field string) map[string]string {
	switch field {
	case FieldTakeProfit:
		return map[string]string{"price": "price", "limitPrice": "price", "percent": "percent"}
	case FieldStopLoss:
		return map[string]string{"price": "price", "stopPrice": "price", "percent": "percent", "type": "type"}
	default:
		return map[string]string{"percent": "percent", "trailPercent": "percent", "distance": "distance", "trailPrice": "distance"}
	}
}

// parseTarget returns the parser of an attachment field: for take_profit
// and stop_loss a price (number or numeric string), a percentage string
// ("2%") or an object ({"percent": 2}, {"price": "71000"}); for
// trailing_stop only a percentage or an object with percent or distance,
// because a bare number would be a guess between the two.
func parseTarget(field string) func(v value) (Target, string) {
	trailing := field == FieldTrailingStop
	return func(v value) (Target, string) {
		var t Target
		switch {
		case v.kind == kindString && strings.HasSuffix(v.text, "%"):
			p, msg := parsePercent(value{kind: kindString, text: strings.TrimSuffix(v.text, "%")})
			t.Percent = p
			return t, msg
		case (v.kind == kindNumber || v.kind == kindString) && trailing:
			return t, `must be {"percent": p}, "p%" or {"distance": d}`
		case v.kind == kindNumber || v.kind == kindString:
			d, msg := positiveDecimal(v)
			if msg != "" {
				return t, "price " + msg
			}
			t.Price = decimal.NullDecimal{Decimal: d, Valid: true}
			return t, ""
		case v.kind != kindObject:
			if trailing {
				return t, `must be {"percent": p}, "p%" or {"distance": d}`
			}
			return t, `must be a price, "p%" or {"percent": p}`
		}
		return parseTargetObject(field, v.text)
	}
}

// parseTargetObject reads {"percent": 2} and its kin. Decode already
// checked the object's syntax and refused duplicate keys in it. An unknown
// key is refused rather than ignored: a misspelt "percnt" must not turn a
// protected entry into an unprotected one.
func parseTargetObject(field, text string) (Target, string) {
	var t Target
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.UseNumber()
	var members map[string]any
	if err := dec.Decode(&members); err != nil {
		return t, "must be an object of numbers"
	}
	keys := targetKeys(field)
	set := 0
	for key, raw := range members {
		role, ok := keys[key]
		if !ok {
			return t, "has an unknown key " + quoteKey(key) + "; known keys: " + strings.Join(slices.Sorted(maps.Keys(keys)), ", ")
		}
		var v value
		switch x := raw.(type) {
		case nil:
			continue
		case json.Number:
			v = value{kind: kindNumber, text: string(x)}
		case string:
			v = value{kind: kindString, text: x}
		default:
			return t, key + " must be a number or a numeric string"
		}
		if role == "type" {
			// TradersPost's stopLoss.type: only a plain stop is a
			// stop_loss; a trailing stop is the trailing_stop field.
			if v.kind != kindString || strings.ToLower(v.text) != "stop" {
				return t, `type must be "stop" (a trailing stop is the trailing_stop field)`
			}
			continue
		}
		set++
		switch role {
		case "percent":
			p, msg := parsePercent(v)
			if msg != "" {
				return t, msg
			}
			t.Percent = p
		case "price", "distance":
			d, msg := positiveDecimal(v)
			if msg != "" {
				return t, role + " " + msg
			}
			if role == "price" {
				t.Price = decimal.NullDecimal{Decimal: d, Valid: true}
			} else {
				t.Distance = decimal.NullDecimal{Decimal: d, Valid: true}
			}
		}
	}
	switch {
	case set == 0 && field == FieldTrailingStop:
		return Target{}, "needs percent or distance"
	case set == 0:
		return Target{}, "needs price or percent"
	case set > 1:
		return Target{}, "takes one of its keys, not several (a price or a percent)"
	}
	return t, ""
}

// attachments reads take_profit, stop_loss and trailing_stop and checks
// them against the signal's action and quoted price. A close takes none:
// they protect a position an entry opens. A target priced on the wrong
// side of the quoted price would trigger at once (a take-profit below a
// long's entry is a market sell at a loss), so it is refused.
func attachments(r *Raw, s *Signal) error {
	// Written out field by field, not through pointers into s: those put
	// every signal, and a Target per field, on the heap (issue 21).
	for _, field := range [...]string{FieldTakeProfit, FieldStopLoss, FieldTrailingStop} {
		t, found, err := fieldValue(r, field, parseTarget(field), Target.Equal)
		if err != nil {
			return err
		}
		if !found {
			continue
		}
		if s.ReduceOnly {
			return fieldError(field, "protects an entry; a close ("+s.Action+") takes no attached exit", r.firstValue(field))
		}
		given := t
		switch field {
		case FieldTakeProfit:
			s.TakeProfit = &given
		case FieldStopLoss:
			s.StopLoss = &given
		default:
			s.TrailingStop = &given
		}
	}
	buy := s.Side == "buy"
	if tp := s.TakeProfit; tp != nil && tp.Price.Valid && s.Price.Valid {
		if buy && !tp.Price.Decimal.GreaterThan(s.Price.Decimal) {
			return fieldError(FieldTakeProfit, "of a buy must be above its price", r.firstValue(FieldTakeProfit))
		}
		if !buy && !tp.Price.Decimal.LessThan(s.Price.Decimal) {
			return fieldError(FieldTakeProfit, "of a sell must be below its price", r.firstValue(FieldTakeProfit))
		}
	}
	if sl := s.StopLoss; sl != nil && sl.Price.Valid && s.Price.Valid {
		if buy && !sl.Price.Decimal.LessThan(s.Price.Decimal) {
			return fieldError(FieldStopLoss, "of a buy must be below its price", r.firstValue(FieldStopLoss))
		}
		if !buy && !sl.Price.Decimal.GreaterThan(s.Price.Decimal) {
			return fieldError(FieldStopLoss, "of a sell must be above its price", r.firstValue(FieldStopLoss))
		}
	}
	if tp, sl := s.TakeProfit, s.StopLoss; tp != nil && sl != nil && tp.Price.Valid && sl.Price.Valid {
		if buy && !sl.Price.Decimal.LessThan(tp.Price.Decimal) {
			return fieldError(FieldStopLoss, "of a buy must be below its take_profit", r.firstValue(FieldStopLoss))
		}
		if !buy && !sl.Price.Decimal.GreaterThan(tp.Price.Decimal) {
			return fieldError(FieldStopLoss, "of a sell must be above its take_profit", r.firstValue(FieldStopLoss))
		}
	}
	return nil
}

// HasAttachments reports whether the signal carries any attached exit.
func (s Signal) HasAttachments() bool {
	return s.TakeProfit != nil || s.StopLoss != nil || s.TrailingStop != nil
}

// quoteKey quotes an unknown key for an error message, cut to 32
// characters: a key, not a value, but still not echoed at any length.
func quoteKey(k string) string {
	if r := []rune(k); len(r) > 32 {
		k = string(r[:32]) + "…"
	}
	b, _ := json.Marshal(k)
	return string(b)
}
