package okxfake

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// The algo order endpoints the fake serves (OKX/Order_Book_Trading/
// Algo_Trading/ in the stored mirror of OKX's v5 pages): place
// (Post_Place_Algo_Order.md), details by algoId or algoClOrdId
// (Get_Algo_Order_Details.md), the list of untriggered ones
// (Get_Algo_Order_List.md) and cancel by algoId (Post_Cancel_Algo_Order.md).
const (
	PathAlgo        = "/api/v5/trade/order-algo"
	PathCancelAlgo  = "/api/v5/trade/cancel-algos"
	PathAlgoPending = "/api/v5/trade/orders-algo-pending"
)

// AlgoOrder is one algo order in the fake's book: trailing stops (ordType
// move_order_stop) placed through the algo endpoint, and the TP/SL algo
// order OKX generates from a swap order's attachAlgoOrds once it filled
// completely (conditional with one trigger, oco with both).
type AlgoOrder struct {
	InstType, InstID, AlgoID, AlgoClOrdID string
	Side, OrdType, TdMode                 string
	// Sz is the size as sent: contracts on a swap.
	Sz decimal.Decimal
	// CallbackRatio (0.01 is 1 %) or CallbackSpread (a price distance):
	// exactly one is set.
	CallbackRatio, CallbackSpread decimal.Decimal
	// TpTriggerPx and SlTriggerPx are a generated TP/SL's triggers (zero:
	// none).
	TpTriggerPx, SlTriggerPx decimal.Decimal
	ReduceOnly               bool
	// State is live until cancelled (canceled) or triggered (by
	// TriggerAlgo: effective, or order_failed when its reduce-only order
	// could not trade; FailCode then says why).
	State, FailCode string
	CTime           time.Time
}

// generateAttached books the TP/SL algo order OKX generates from o's
// attachAlgoOrds: "TP/SL algo order will be generated only when this order
// is filled" (Post_Place_Order.md), under algoClOrdId attachAlgoClOrdId,
// on the other side, for o's size; conditional with one trigger, oco
// with both. What OKX does with it when the position later closes is not
// documented (attachAlgoOrds takes no cxlOnClosePos, which Post_Place_
// Algo_Order.md gives the TP/SL types alone): the fake keeps it live, and
// TriggerAlgo trades it against the position held then. Whether OKX makes
// it reduce-only is not documented either: the fake books it reduce-only,
// the milder reading. Callers hold mu.
func (s *Server) generateAttached(o *Order) {
	if o.TpTriggerPx.IsZero() && o.SlTriggerPx.IsZero() {
		return
	}
	side, ordType := "sell", "conditional"
	if o.Side == "sell" {
		side = "buy"
	}
	if !o.TpTriggerPx.IsZero() && !o.SlTriggerPx.IsZero() {
		ordType = "oco"
	}
	s.nextID++
	s.algos = append(s.algos, &AlgoOrder{InstType: InstSwap, InstID: o.InstID, AlgoID: strconv.FormatInt(900000000000000000+s.nextID, 10),
		AlgoClOrdID: o.AttachAlgoClOrdID, Side: side, OrdType: ordType, TdMode: "cross", Sz: o.Sz,
		TpTriggerPx: o.TpTriggerPx, SlTriggerPx: o.SlTriggerPx, ReduceOnly: true, State: "live", CTime: s.now()})
}

// CallbackRange bounds a trailing stop's callbackRatio as min < x <= max.
// The error page names the rule (51257: "The callback rate should be
// {min}< x<={max}%") but not the bounds; the fake's default is (0, 1) —
// more than 0 and below 100 % — and a test narrows it with
// SetCallbackRange.
type CallbackRange struct{ Min, Max decimal.Decimal }

// SetCallbackRange sets the callbackRatio bounds the fake enforces
// (51257).
func (s *Server) SetCallbackRange(r CallbackRange) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.callbackRange = &r
}

// AlgoOrders are the algo orders booked, oldest first.
func (s *Server) AlgoOrders() []AlgoOrder {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]AlgoOrder, len(s.algos))
	for i, a := range s.algos {
		out[i] = *a
	}
	return out
}

// TrailingStops are the trailing stops (move_order_stop) booked, oldest
// first: AlgoOrders without the TP/SL OKX generated from attachAlgoOrds.
func (s *Server) TrailingStops() []AlgoOrder {
	var out []AlgoOrder
	for _, a := range s.AlgoOrders() {
		if a.OrdType == "move_order_stop" {
			out = append(out, a)
		}
	}
	return out
}

// TriggerAlgo triggers a live algo order, as OKX does once the price has
// come back by the callback: "Once the trigger price is reached, a market
// order is placed" (Post_Place_Algo_Order.md, Trailing Stop Order). On a
// swap that order trades against the net position as it is then, not as
// it was when the stop was placed: OKX cancels a trailing stop neither
// when the position it protected is closed (cxlOnClosePos is a parameter
// of TP/SL orders only, conditional and oco) nor when another position is
// opened after it. So a reduce-only stop sells (a sell) or buys back (a
// buy) its size of whatever position it reduces — the next long of the
// instrument too — and the order becomes effective; a reduce-only stop
// that would reduce nothing, or less than its size ("If sz exceeds the
// current position size, the entire order is rejected", Post_Place_Order.md
// reduceOnly), ends order_failed with failCode 51169. A stop that is not
// reduce-only trades its size whatever the position.
func (s *Server) TriggerAlgo(algoClOrdID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.algos) - 1; i >= 0; i-- {
		a := s.algos[i]
		if a.AlgoClOrdID != algoClOrdID || a.State != "live" {
			continue
		}
		a.State = "effective"
		if a.InstType != InstSwap {
			return nil
		}
		pos := s.positions[a.InstID]
		signed := a.Sz
		if a.Side == "sell" {
			signed = signed.Neg()
		}
		reduces := (a.Side == "sell" && pos.IsPositive()) || (a.Side == "buy" && pos.IsNegative())
		if a.ReduceOnly && (!reduces || a.Sz.GreaterThan(pos.Abs())) {
			a.State, a.FailCode = "order_failed", "51169"
			return nil
		}
		s.positions[a.InstID] = pos.Add(signed)
		return nil
	}
	return ErrNoOrder
}

// AlgoPlacements is how many algo placements (POST
// /api/v5/trade/order-algo) the fake received, answered or not.
func (s *Server) AlgoPlacements() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.algoPlacements
}

// LoseNextAlgo makes the next algo placement book the order and answer
// HTTP 502 with an HTML body (the answer is lost after acceptance).
func (s *Server) LoseNextAlgo() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loseAlgo++
}

// TimeOutNextAlgo makes the next algo placement answer 50004 ("API
// endpoint request timeout. (does not mean that the request was successful
// or failed, please check the request result).") and book nothing, as a
// request OKX has not processed (yet) looks.
func (s *Server) TimeOutNextAlgo() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timeoutAlgo++
}

type algoBody struct {
	InstID         string `json:"instId"`
	TdMode         string `json:"tdMode"`
	Side           string `json:"side"`
	OrdType        string `json:"ordType"`
	Sz             string `json:"sz"`
	AlgoClOrdID    string `json:"algoClOrdId"`
	ReduceOnly     bool   `json:"reduceOnly"`
	CallbackRatio  string `json:"callbackRatio"`
	CallbackSpread string `json:"callbackSpread"`
	ActivePx       string `json:"activePx"`
	PosSide        string `json:"posSide"`
}

// algoFail is a refused algo order: envelope code 1, the reason in sCode.
func algoFail(algoClOrdID string, code int, msg string) reply {
	return reply{status: http.StatusOK, code: "1", msg: "",
		data: []map[string]string{{"algoId": "", "algoClOrdId": algoClOrdID, "sCode": strconv.Itoa(code), "sMsg": msg}}}
}

// serveAlgoPlace is POST /api/v5/trade/order-algo for ordType
// move_order_stop, with the rules OKX documents: algoClOrdId of up to 32
// alphanumerics, unique among the account's pending algo orders (51065
// "algoClOrdId already exists."); exactly one of callbackRatio and
// callbackSpread; the ratio within CallbackRange (51257); a size on the
// lot and at least the minimum; a reduce-only order only against a
// position it reduces, of at least its size (51169, as for plain
// orders). activePx is refused: hoox never sends it, and the fake does not
// model activation.
func (s *Server) serveAlgoPlace(w http.ResponseWriter, r *http.Request) {
	s.count(r)
	s.mu.Lock()
	s.algoPlacements++
	s.mu.Unlock()
	body, rep, okAuth := s.authenticate(r)
	if !okAuth {
		write(w, rep)
		return
	}
	s.mu.Lock()
	if s.timeoutAlgo > 0 {
		s.timeoutAlgo--
		s.mu.Unlock()
		write(w, fail(http.StatusBadRequest, 50004, "API endpoint request timeout. (does not mean that the request was successful or failed, please check the request result)."))
		return
	}
	rep = s.placeAlgo(body)
	lose := rep.code == "0" && s.loseAlgo > 0
	if lose {
		s.loseAlgo--
	}
	s.mu.Unlock()
	if lose {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("<html><body><h1>502 Bad Gateway</h1></body></html>"))
		return
	}
	write(w, rep)
}

// placeAlgo books a trailing stop if OKX's rules allow it; callers hold mu.
func (s *Server) placeAlgo(body []byte) reply {
	var b algoBody
	if err := json.Unmarshal(body, &b); err != nil {
		return fail(http.StatusBadRequest, 50002, "JSON syntax error")
	}
	id := b.AlgoClOrdID
	if !clOrdIDPattern.MatchString(id) {
		return algoFail(id, 51000, "Parameter algoClOrdId error")
	}
	in, found := s.instruments[b.InstID]
	if !found {
		return algoFail(id, 51001, "Instrument ID or Spread ID doesn't exist.")
	}
	if b.OrdType != "move_order_stop" {
		return algoFail(id, 51000, "Parameter ordType error: the fake takes move_order_stop only")
	}
	if b.Side != "buy" && b.Side != "sell" {
		return algoFail(id, 51000, "Parameter side error")
	}
	for _, a := range s.algos {
		if a.AlgoClOrdID == id && a.State == "live" {
			return algoFail(id, 51065, "algoClOrdId already exists.")
		}
	}
	if b.ActivePx != "" {
		return algoFail(id, 51000, "Parameter activePx error: the fake does not model activation")
	}
	if (b.CallbackRatio == "") == (b.CallbackSpread == "") {
		return algoFail(id, 50015, "Either parameter callbackRatio or callbackSpread is required")
	}
	var ratio, spread decimal.Decimal
	var err error
	if b.CallbackRatio != "" {
		rng := CallbackRange{Min: decimal.Zero, Max: decimal.RequireFromString("0.99999999")}
		if s.callbackRange != nil {
			rng = *s.callbackRange
		}
		if ratio, err = decimal.NewFromString(b.CallbackRatio); err != nil || !ratio.GreaterThan(rng.Min) || ratio.GreaterThan(rng.Max) {
			return algoFail(id, 51257, "Trailing stop order callback rate error. The callback rate should be "+
				rng.Min.Shift(2).String()+"< x<="+rng.Max.Shift(2).String()+"%.")
		}
	} else if spread, err = decimal.NewFromString(b.CallbackSpread); err != nil || !spread.IsPositive() {
		return algoFail(id, 51000, "Parameter callbackSpread error")
	}
	sz, err := decimal.NewFromString(b.Sz)
	if err != nil || !sz.IsPositive() {
		return algoFail(id, 51000, "Parameter sz error")
	}
	if !sz.Mod(in.LotSz).IsZero() {
		return algoFail(id, 51121, "Order quantity must be a multiple of the lot size.")
	}
	if sz.LessThan(in.MinSz) {
		return algoFail(id, 51020, "Your order should meet or exceed the minimum order amount.")
	}
	if in.InstType == InstSwap && b.ReduceOnly {
		pos := s.positions[b.InstID]
		reduces := (b.Side == "sell" && pos.IsPositive()) || (b.Side == "buy" && pos.IsNegative())
		if !reduces || sz.GreaterThan(pos.Abs()) {
			return algoFail(id, 51169, "Order failed because you don't have any positions in this direction for this contract to reduce or close.")
		}
	}
	if b.ReduceOnly {
		if rep, refused := s.reduceOnlyRefused(id, b.InstID); refused {
			return rep
		}
	}
	s.nextID++
	a := &AlgoOrder{InstType: in.InstType, InstID: b.InstID, AlgoID: strconv.FormatInt(900000000000000000+s.nextID, 10), AlgoClOrdID: id,
		Side: b.Side, OrdType: b.OrdType, TdMode: b.TdMode, Sz: sz, CallbackRatio: ratio, CallbackSpread: spread,
		ReduceOnly: b.ReduceOnly, State: "live", CTime: s.now()}
	s.algos = append(s.algos, a)
	return ok([]map[string]string{{"algoId": a.AlgoID, "algoClOrdId": id, "clOrdId": "", "tag": "", "sCode": "0", "sMsg": ""}})
}

// serveAlgoDetails is GET /api/v5/trade/order-algo by algoId or
// algoClOrdId (the latest under it); 51603 "Order does not exist." when
// there is none (the page names no code of its own for it: an assumption,
// the plain order query's).
func (s *Server) serveAlgoDetails(r *http.Request, _ []byte) reply {
	q := r.URL.Query()
	algoID, clID := q.Get("algoId"), q.Get("algoClOrdId")
	if algoID == "" && clID == "" {
		return fail(http.StatusOK, 50015, "Either parameter algoId or algoClOrdId is required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.algos) - 1; i >= 0; i-- {
		a := s.algos[i]
		if (algoID != "" && a.AlgoID == algoID) || (algoID == "" && a.AlgoClOrdID == clID) {
			return ok([]map[string]any{algoJSON(a)})
		}
	}
	return fail(http.StatusOK, 51603, "Order does not exist.")
}

func algoJSON(a *AlgoOrder) map[string]any {
	m := map[string]any{"instType": a.InstType, "instId": a.InstID, "algoId": a.AlgoID, "algoClOrdId": a.AlgoClOrdID,
		"ordType": a.OrdType, "side": a.Side, "sz": str(a.Sz), "state": a.State, "tdMode": a.TdMode,
		"reduceOnly": strconv.FormatBool(a.ReduceOnly), "callbackRatio": "", "callbackSpread": "", "activePx": "",
		"cTime": strconv.FormatInt(a.CTime.UnixMilli(), 10), "failCode": a.FailCode}
	switch {
	case a.OrdType != "move_order_stop":
		m["tpTriggerPx"], m["slTriggerPx"] = "", ""
		if a.TpTriggerPx.IsPositive() {
			m["tpTriggerPx"] = str(a.TpTriggerPx)
		}
		if a.SlTriggerPx.IsPositive() {
			m["slTriggerPx"] = str(a.SlTriggerPx)
		}
	case a.CallbackRatio.IsPositive():
		m["callbackRatio"] = str(a.CallbackRatio)
	default:
		m["callbackSpread"] = str(a.CallbackSpread)
	}
	return m
}

// serveAlgoCancel is POST /api/v5/trade/cancel-algos: an array of {algoId,
// instId}; a live order becomes canceled. One that is not live is refused
// in its sCode: a triggered one (effective) with 51416 "Order has been
// triggered and can't be canceled" (Error_Code/Rest_API/Public.md); any
// other with 51400, as the plain cancel does (the page gives no code for
// it: an assumption).
func (s *Server) serveAlgoCancel(_ *http.Request, body []byte) reply {
	var items []struct {
		AlgoID string `json:"algoId"`
		InstID string `json:"instId"`
	}
	if json.Unmarshal(body, &items) != nil || len(items) == 0 || len(items) > 10 {
		return fail(http.StatusBadRequest, 50002, "JSON syntax error")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]string
	failed := false
	for _, it := range items {
		res := map[string]string{"algoId": it.AlgoID, "algoClOrdId": "", "clOrdId": "", "tag": "", "sCode": "51400",
			"sMsg": "Order cancellation failed as the order has been filled, canceled or does not exist."}
		for _, a := range s.algos {
			if a.AlgoID != it.AlgoID || a.InstID != it.InstID {
				continue
			}
			switch a.State {
			case "live":
				a.State = "canceled"
				res["sCode"], res["sMsg"] = "0", ""
			case "effective":
				res["sCode"], res["sMsg"] = "51416", "Order has been triggered and can't be canceled"
			}
		}
		failed = failed || res["sCode"] != "0"
		out = append(out, res)
	}
	if failed {
		return reply{status: http.StatusOK, code: "1", msg: "", data: out}
	}
	return ok(out)
}

// serveAlgoPending is GET /api/v5/trade/orders-algo-pending
// (Get_Algo_Order_List.md): "a list of untriggered Algo orders under the
// current account" of one ordType (required; "unlike other ordType which
// only can use one type, conditional and oco both can be used and
// separated with comma": any other list is refused, 51000), narrowed by
// instType and instId, newest first, at most limit ("The maximum is 100.
// The default is 100"). after pages back: "records earlier than the
// requested algoId" (qiuham/crypto-api-docs docs/okx/order/book/
// trading-algo-trading-get-algo-order-list.md, request parameters); the
// fake's algoIds grow with time, as OKX's do, so earlier is a smaller ID.
// before (newer than) is refused: hoox pages back only.
func (s *Server) serveAlgoPending(r *http.Request, _ []byte) reply {
	q := r.URL.Query()
	if q.Get("ordType") == "" {
		return fail(http.StatusBadRequest, 50014, "Parameter ordType can not be empty.")
	}
	types := strings.Split(q.Get("ordType"), ",")
	if len(types) > 1 && (len(types) != 2 || !slices.Contains(types, "conditional") || !slices.Contains(types, "oco")) {
		return fail(http.StatusOK, 51000, "Parameter ordType error")
	}
	if q.Get("before") != "" {
		return fail(http.StatusOK, 51000, "Parameter before error: the fake pages back (after) only")
	}
	var after int64
	if a := q.Get("after"); a != "" {
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil {
			return fail(http.StatusOK, 51000, "Parameter after error")
		}
		after = n
	}
	limit := 100
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 100 {
			return fail(http.StatusOK, 51000, "Parameter limit error")
		}
		limit = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for i := len(s.algos) - 1; i >= 0 && len(out) < limit; i-- {
		a := s.algos[i]
		if id, _ := strconv.ParseInt(a.AlgoID, 10, 64); after != 0 && id >= after {
			continue
		}
		if a.State != "live" || !slices.Contains(types, a.OrdType) ||
			(q.Get("instType") != "" && a.InstType != q.Get("instType")) || (q.Get("instId") != "" && a.InstID != q.Get("instId")) {
			continue
		}
		out = append(out, algoJSON(a))
	}
	return ok(out)
}
