package signal

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAttachmentsParsed(t *testing.T) {
	t.Parallel()

	const entry = `"exchange":"bybit","symbol":"BTCUSDT","action":"buy","quantity":1`
	tests := []struct {
		name  string
		body  string
		check func(t *testing.T, s Signal)
	}{
		{"price as string", `{` + entry + `,"take_profit":"71000","stop_loss":"65000"}`, func(t *testing.T, s Signal) {
			require.Equal(t, "71000", s.TakeProfit.Price.Decimal.String())
			require.False(t, s.TakeProfit.Percent.Valid)
			require.Equal(t, "65000", s.StopLoss.Price.Decimal.String())
			require.Nil(t, s.TrailingStop)
		}},
		{"price as number", `{` + entry + `,"take_profit":71000.5}`, func(t *testing.T, s Signal) {
			require.Equal(t, "71000.5", s.TakeProfit.Price.Decimal.String())
		}},
		{"percent object", `{` + entry + `,"take_profit":{"percent":2},"stop_loss":{"percent":"1.5"}}`, func(t *testing.T, s Signal) {
			require.Equal(t, "2", s.TakeProfit.Percent.Decimal.String())
			require.False(t, s.TakeProfit.Price.Valid)
			require.Equal(t, "1.5", s.StopLoss.Percent.Decimal.String())
		}},
		{"percent string", `{` + entry + `,"stopLoss":"1%"}`, func(t *testing.T, s Signal) {
			require.Equal(t, "1", s.StopLoss.Percent.Decimal.String())
		}},
		{"TradersPost keys", `{` + entry + `,"takeProfit":{"limitPrice":"71000"},"stopLoss":{"type":"stop","stopPrice":65000}}`, func(t *testing.T, s Signal) {
			require.Equal(t, "71000", s.TakeProfit.Price.Decimal.String())
			require.Equal(t, "65000", s.StopLoss.Price.Decimal.String())
		}},
		{"trailing percent and distance", `{` + entry + `,"trailing_stop":{"percent":1}}`, func(t *testing.T, s Signal) {
			require.Equal(t, "1", s.TrailingStop.Percent.Decimal.String())
		}},
		{"trailing distance", `{` + entry + `,"trailingStop":{"trailPrice":"500"}}`, func(t *testing.T, s Signal) {
			require.Equal(t, "500", s.TrailingStop.Distance.Decimal.String())
			require.False(t, s.TrailingStop.Price.Valid)
		}},
		{"sell with prices on its sides", `{"exchange":"bybit","symbol":"X","action":"short","quantity":1,"price":"100","take_profit":"90","stop_loss":"105"}`, func(t *testing.T, s Signal) {
			require.Equal(t, "90", s.TakeProfit.Price.Decimal.String())
		}},
		{"null is not given", `{` + entry + `,"take_profit":null}`, func(t *testing.T, s Signal) {
			require.Nil(t, s.TakeProfit)
			require.False(t, s.HasAttachments())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustSignal(t, tt.body)
			tt.check(t, s)
			// The canonical form decodes to the same signal.
			require.Equal(t, s.Canonical(), mustSignal(t, string(s.Canonical())).Canonical())
		})
	}
}

func TestAttachmentsRefused(t *testing.T) {
	t.Parallel()

	const entry = `"exchange":"bybit","symbol":"BTCUSDT","action":"buy","quantity":1`
	tests := []struct {
		name, body, field, msg string
	}{
		{"negative price", `{` + entry + `,"take_profit":"-1"}`, FieldTakeProfit, "price must be greater than 0"},
		{"zero price", `{` + entry + `,"stop_loss":0}`, FieldStopLoss, "price must be greater than 0"},
		{"zero percent", `{` + entry + `,"take_profit":{"percent":0}}`, FieldTakeProfit, "percent must be greater than 0 and less than 100"},
		{"negative percent", `{` + entry + `,"stop_loss":"-2%"}`, FieldStopLoss, "percent must be greater than 0 and less than 100"},
		{"percent of 100", `{` + entry + `,"stop_loss":{"percent":100}}`, FieldStopLoss, "percent must be greater than 0 and less than 100"},
		{"unknown key", `{` + entry + `,"stop_loss":{"percnt":2}}`, FieldStopLoss, `has an unknown key "percnt"; known keys: percent, price, stopPrice, type`},
		{"both price and percent", `{` + entry + `,"take_profit":{"price":1,"percent":2}}`, FieldTakeProfit, "takes one of its keys, not several (a price or a percent)"},
		{"empty object", `{` + entry + `,"take_profit":{}}`, FieldTakeProfit, "needs price or percent"},
		{"array", `{` + entry + `,"take_profit":[1]}`, FieldTakeProfit, `must be a price, "p%" or {"percent": p}`},
		{"nested object value", `{` + entry + `,"take_profit":{"percent":{"x":1}}}`, FieldTakeProfit, "percent must be a number or a numeric string"},
		{"bare trailing number", `{` + entry + `,"trailing_stop":1}`, FieldTrailingStop, `must be {"percent": p}, "p%" or {"distance": d}`},
		{"trailing stop type", `{` + entry + `,"stop_loss":{"type":"trailing_stop","percent":1}}`, FieldStopLoss, `type must be "stop" (a trailing stop is the trailing_stop field)`},
		{"on a close", `{"exchange":"bybit","symbol":"X","action":"close_long","quantity":1,"stop_loss":"5"}`, FieldStopLoss, "protects an entry; a close (close_long) takes no attached exit"},
		{"on a flat", `{"exchange":"bybit","symbol":"X","action":"sell","sentiment":"flat","quantity":1,"take_profit":"5%"}`, FieldTakeProfit, "protects an entry; a close (close) takes no attached exit"},
		{"buy take-profit below its price", `{` + entry + `,"price":"100","take_profit":"99"}`, FieldTakeProfit, "of a buy must be above its price"},
		{"buy take-profit at its price", `{` + entry + `,"price":"100","take_profit":"100"}`, FieldTakeProfit, "of a buy must be above its price"},
		{"buy stop-loss above its price", `{` + entry + `,"price":"100","stop_loss":"101"}`, FieldStopLoss, "of a buy must be below its price"},
		{"sell take-profit above its price", `{"exchange":"bybit","symbol":"X","action":"sell","quantity":1,"price":"100","take_profit":"101"}`, FieldTakeProfit, "of a sell must be below its price"},
		{"sell stop-loss below its price", `{"exchange":"bybit","symbol":"X","action":"short","quantity":1,"price":"100","stop_loss":"99"}`, FieldStopLoss, "of a sell must be above its price"},
		{"buy stop-loss above its take-profit", `{` + entry + `,"take_profit":"100","stop_loss":"110"}`, FieldStopLoss, "of a buy must be below its take_profit"},
		{"aliases disagree", `{` + entry + `,"take_profit":"100","takeProfit":"101"}`, FieldTakeProfit, `given as both "take_profit" and "takeProfit" with different values`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := signalError(t, tt.body)
			require.Equal(t, tt.field, e.Field)
			require.Equal(t, tt.msg, e.Msg)
			require.Positive(t, e.Line, "the error points at the value")
		})
	}
}

func TestAttachmentsFingerprint(t *testing.T) {
	t.Parallel()

	const entry = `"exchange":"bybit","symbol":"BTCUSDT","action":"buy","quantity":1`
	plain := mustSignal(t, `{`+entry+`}`)
	// A signal without attachments keeps the fingerprint it had before
	// they existed.
	require.NotContains(t, string(plain.Canonical()), "take_profit")

	a := mustSignal(t, `{`+entry+`,"take_profit":{"percent":2.0}}`)
	b := mustSignal(t, `{`+entry+`,"takeProfit":"2%"}`)
	require.Equal(t, a.Fingerprint(), b.Fingerprint(), "the same target in two spellings is the same signal")
	require.NotEqual(t, plain.Fingerprint(), a.Fingerprint())

	price := mustSignal(t, `{`+entry+`,"take_profit":"2"}`)
	require.NotEqual(t, a.Fingerprint(), price.Fingerprint(), "a price of 2 is not 2 %")
	sl := mustSignal(t, `{`+entry+`,"stop_loss":"2%"}`)
	require.NotEqual(t, a.Fingerprint(), sl.Fingerprint())
}
