package bybitfake

import (
	"encoding/json"
	"net/http"

	"github.com/shopspring/decimal"
)

// PathTradingStop is POST /v5/position/trading-stop
// (docs/v5/position/trading-stop.mdx): a position's take-profit, stop-loss
// or trailing stop.
const PathTradingStop = "/v5/position/trading-stop"

type tradingStopRequest struct {
	Category     string  `json:"category"`
	Symbol       string  `json:"symbol"`
	TPSLMode     string  `json:"tpslMode"`
	PositionIdx  *int    `json:"positionIdx"`
	TrailingStop *string `json:"trailingStop"`
	TakeProfit   *string `json:"takeProfit"`
	StopLoss     *string `json:"stopLoss"`
	ActivePrice  *string `json:"activePrice"`
}

// serveTradingStop sets a linear position's trailing stop, the one part of
// trading-stop.mdx hoox uses, with the doc's rules: category linear (the
// endpoint takes no spot), tpslMode and positionIdx required, trailingStop
// a price distance that "cannot be less than 0" and "0 means cancel TS".
// What the doc leaves open the fake decides the way the position list
// reports it (one trailingStop per position, "the distance from market
// price"): a trailing stop is the whole position's setting, so it needs
// tpslMode Full (10001 otherwise); it needs a position (10001 "can not set
// tp/sl/ts for zero position"); its distance is a multiple of the tick
// (10001); and setting the value the position already holds is 34040
// "Not modified" (error.mdx: "you already set this TP/SL value"). The
// setting goes when the position closes (settle, SetPosition), as the
// doc's tip says of the orders it creates. Take-profit, stop-loss and
// activePrice are not modelled: the fake refuses them (10001) rather than
// pretend. s.mu is held.
func (s *Server) serveTradingStop(_ *http.Request, body []byte) reply {
	var req tradingStopRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return fail(10001, "params error: body is not json")
	}
	if req.Category != CategoryLinear {
		return fail(10001, "params error: category invalid")
	}
	in, known := s.instruments[CategoryLinear][req.Symbol]
	if !known {
		return fail(10001, "params error: symbol invalid")
	}
	switch {
	case req.TPSLMode != "Full" && req.TPSLMode != "Partial":
		return fail(10001, "params error: tpslMode invalid")
	case req.PositionIdx == nil:
		return fail(10001, "params error: positionIdx is required")
	case s.hedge && *req.PositionIdx == 0 || !s.hedge && *req.PositionIdx != 0:
		return fail(10001, "position idx not match position mode")
	case req.TakeProfit != nil || req.StopLoss != nil || req.ActivePrice != nil:
		return fail(10001, "params error: the fake models trailingStop only")
	case req.TrailingStop == nil:
		return fail(34040, "not modified")
	case req.TPSLMode != "Full":
		return fail(10001, "params error: trailingStop can only be set when tpslMode is Full")
	}
	ts, err := decimal.NewFromString(*req.TrailingStop)
	switch {
	case err != nil || ts.IsNegative():
		return fail(10001, "params error: trailingStop invalid")
	case !ts.Mod(in.TickSize).IsZero():
		return fail(10001, "params error: trailingStop must be a multiple of the tick size")
	}
	p := s.positions[req.Symbol]
	if !p.Size.IsPositive() {
		return fail(10001, "can not set tp/sl/ts for zero position")
	}
	if p.TrailingStop.Equal(ts) {
		return fail(34040, "not modified")
	}
	p.TrailingStop = ts
	s.positions[req.Symbol] = p
	s.trailingSet[req.Symbol]++
	rep := ok(struct{}{})
	rep.accepted = true // an AfterAccept fault loses this answer
	return rep
}

// TrailingStop returns the trailing stop distance the linear position on
// symbol holds (zero: none).
func (s *Server) TrailingStop(symbol string) decimal.Decimal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.positions[symbol].TrailingStop
}

// TrailingStopSets counts the trading-stop requests that changed symbol's
// trailing stop (a 34040 "not modified" is not counted).
func (s *Server) TrailingStopSets(symbol string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.trailingSet[symbol]
}
