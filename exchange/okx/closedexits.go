package okx

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/internal/venuekit"
	"github.com/hoox/hoox/signal"
)

// AttachedAlgoID is the algoClOrdId hoox gives the TP/SL algo order OKX
// generates from the attachAlgoOrds of its order clOrdID (sent as
// attachAlgoClOrdId): hoox's shape ("hx" and 30 base32 characters),
// derived like a leg's ID under a number no leg takes, so it is the
// same on every send of the order and unlike any other ID hoox makes.
func AttachedAlgoID(clOrdID string) string {
	return signal.LegClientOrderID(clOrdID, math.MaxInt32)
}

// pathAlgoPending lists the account's untriggered algo orders of one
// ordType (Get_Algo_Order_List.md).
const pathAlgoPending = "/api/v5/trade/orders-algo-pending"

// algoPending is an untriggered algo order as Get_Algo_Order_List.md
// lists it.
type algoPending struct {
	AlgoID      string `json:"algoId"`
	AlgoClOrdID string `json:"algoClOrdId"`
	InstID      string `json:"instId"`
	OrdType     string `json:"ordType"`
	Side        string `json:"side"`
	Sz          string `json:"sz"`
	State       string `json:"state"`
	ReduceOnly  string `json:"reduceOnly"`
	CTime       string `json:"cTime"`
}

// flattens reports whether close o is meant to leave no position: a close
// of all of it, a percent_of_position close of 100 % (or more) of it, or
// the first part of either split over maxMktSz (Split set: the other
// parts follow it). A percent_of_position exit of less and a later part of
// a split close (Partial, no Split, no Sizing) leave some of the position
// open, or may.
func flattens(o exchange.Order) bool {
	return !o.Partial || (o.Split != nil && o.Sizing == nil) || exchange.WholePosition(o.Sizing)
}

// cancelClosedExits cancels hoox's exits left live on the side of instID
// that a filled swap close of the whole position just closed (side is the
// close's: sell for a long's): its trailing stops, and the TP/SL algo
// orders OKX generated from its entries' attachAlgoOrds. hoox places an
// entry's trailing stop after the fill as its own reduce-only
// move_order_stop (trailing.go); OKX generates the take-profit/stop-loss
// "only when this order is filled" (Post_Place_Order.md) under the
// attachAlgoClOrdId hoox sent (AttachedAlgoID), and says nothing of what
// becomes of it when the position closes: attachAlgoOrds takes no
// cxlOnClosePos. OKX cancels a TP/SL algo order "when the position is
// fully closed" only if it was placed with cxlOnClosePos, a parameter of
// the TP/SL order types (conditional, oco), not of the trailing stop
// (Post_Place_Algo_Order.md); a reduce-only order is not refused or
// cancelled for a position that closes and opens again. Left live, a
// long's SELL trailing stop would sell, when the price comes back by its
// callback, the instrument's next long. The account is in net mode
// (hedge mode is refused), so every such stop of that side — whichever
// strategy's — protected the position that is gone.
//
// They are listed with GET /api/v5/trade/orders-algo-pending
// (Get_Algo_Order_List.md; instType SWAP and instId: the untriggered ones,
// with algoClOrdId, side, reduceOnly and cTime, every page of them:
// listPendingAlgos) in two listings: the
// trailing stops (ordType move_order_stop), then the TP/SL in one
// (conditional,oco: "unlike other ordType which only can use one type,
// conditional and oco both can be used and separated with comma",
// qiuham/crypto-api-docs docs/okx/order/book/trading-algo-trading-get-algo-order-list.md:53-62).
// A listing OKX rate limits ("20 requests per 2 seconds", User ID, :13-15)
// is sent once more after the pause, if that is within maxAlgoListWait and
// ctx (listPendingAlgos). What one listing found is cancelled even when
// the other failed. They are cancelled one by one by algoId with POST
// /api/v5/trade/cancel-algos (Post_Cancel_Algo_Order.md). Only orders of
// side whose algoClOrdId carries hoox's prefix are cancelled (trailing
// stops: reduce-only ones): an algo order the trader placed by hand is
// theirs to keep. 51400 (no longer live: cancelled meanwhile) and 51416
// (triggered first) are skipped.
//
// The close has filled: nothing here may fail it. What could not be listed
// or cancelled is logged at ERROR; a trailing stop's follow job keeps
// looking at it (a generated TP/SL has none: it stays live at OKX).
//
// Signals of one instrument are not run one at a time: an entry may fill
// beside the close. So the exits are listed first and the position read
// after. Flat, every listed exit protects nothing and is cancelled. Not
// flat after a whole close (whole: one order for all of the position that
// executed all it was sent for), only the exits created by the time the
// close began (started, on OKX's clock, before the close read the
// position) are cancelled: they protected the position it closed; an exit
// created since (a stop placed, a TP/SL generated by a fill) is the new
// entry's. An entry filling after the position read gets its exits after
// the listing: they are not in it. started zero (Lookup: the close's
// position read is not known there; the order's cTime is after it, and an
// entry that filled and got its stop between the two is still open)
// cancels nothing unless the position is flat. Not flat after a close
// that was not whole — a part of a split close, a percent_of_position
// share, a close OKX ended canceled with only part executed at its price
// limit (report: filled, cut short) — nothing is cancelled: what is left
// of the position is the same long, not an entry beside the close, and
// its exits still protect it; the close that flattens it cancels them (so
// a split close's exits go with the part that leaves the position flat).
//
// closed says the position the close closed is gone: flat, or whole (when
// the position could not be read, whole alone); beside, with closed, that
// the position was read open after it (an entry filled beside the close).
func (v *Venue) cancelClosedExits(ctx context.Context, f Filters, side, closeID string, started time.Time, whole bool) (cancelled []exchange.CancelledOrder, closed, beside bool) {
	instID := f.InstID
	var open []algoPending
	// The trailing stops, then the TP/SL OKX generated from the entries'
	// attachAlgoOrds (conditional with one trigger, oco with both).
	for _, ordType := range []string{"move_order_stop", "conditional,oco"} {
		page, err := v.listPendingAlgos(ctx, instID, ordType)
		open = append(open, page...) // what was listed before a failure is still cancelled
		if err != nil {
			v.log.ErrorContext(ctx, "okx: a close of the whole position filled, but some of its side's live exits could not be listed to cancel them",
				"client_order_id", closeID, "inst_id", instID, "ord_type", ordType, "error", err)
			continue
		}
	}
	if len(open) == 0 && whole {
		// Nothing to cancel, and a whole close closed its position: the
		// position is not read again.
		return nil, true, false
	}
	pos, err := v.netPosition(ctx, instID)
	switch {
	case err != nil:
		v.log.ErrorContext(ctx, "okx: a close filled, but the position could not be read again to cancel its side's exits",
			"client_order_id", closeID, "inst_id", instID, "error", err)
		return nil, whole, false
	case !pos.IsZero() && !whole:
		return nil, false, false // what is left of the position keeps its exits
	case len(open) == 0:
		return nil, true, !pos.IsZero() // flat (or whole), nothing listed to cancel
	case started.IsZero() && !pos.IsZero():
		v.log.WarnContext(ctx, "okx: a close of the whole position filled, but a position is open again (an entry beside it) and when the close read the position is not known here: no exit is cancelled",
			"client_order_id", closeID, "inst_id", instID, "position", pos.String())
		return nil, true, true
	case !pos.IsZero():
		v.log.WarnContext(ctx, "okx: a close of the whole position filled, but a position is open again (an entry beside it): only the exits created before the close are cancelled",
			"client_order_id", closeID, "inst_id", instID, "position", pos.String())
	}
	flat := pos.IsZero()
	for _, a := range open {
		created, _ := strconv.ParseInt(a.CTime, 10, 64)
		// hoox's trailing stops are reduce-only; whether OKX makes the
		// TP/SL it generates reduce-only is not documented, and its ID
		// (AttachedAlgoID) says it is hoox's.
		if a.InstID != instID || (a.OrdType == "move_order_stop" && a.ReduceOnly != "true") || !strings.EqualFold(a.Side, side) ||
			!strings.HasPrefix(a.AlgoClOrdID, "hx") || (!flat && created > started.UnixMilli()) {
			continue
		}
		body := []map[string]string{{"algoId": a.AlgoID, "instId": instID}}
		err := v.do(ctx, request{method: http.MethodPost, path: pathCancelAlgo, body: body, private: true, instID: instID}, nil)
		if e, ok := errors.AsType[*APIError](err); ok && (e.Code == 51400 || algoTriggered(e.Code)) {
			continue // no longer live
		}
		if err != nil {
			v.log.ErrorContext(ctx, "okx: a close of the whole position filled, but a live exit of its side was not cancelled",
				"client_order_id", closeID, "inst_id", instID, "exit_client_order_id", a.AlgoClOrdID, "error", fmt.Errorf("cancel algo %s: %w", a.AlgoID, err))
			continue
		}
		cancelled = append(cancelled, exchange.CancelledOrder{ClientOrderID: a.AlgoClOrdID, ExchangeOrderID: a.AlgoID,
			Side: strings.ToLower(a.Side), Remaining: f.fromWire(venuekit.Dec(a.Sz)).String(), PlacedByHoox: true})
	}
	if len(cancelled) > 0 {
		v.log.InfoContext(ctx, "okx: a close filled and left its position gone; its side's live exits cancelled",
			"client_order_id", closeID, "inst_id", instID, "cancelled", len(cancelled))
	}
	return cancelled, true, !flat
}

// maxAlgoListWait bounds the wait before a rate-limited algo order
// listing is sent again: OKX's window for it is 2 seconds
// (Get_Algo_Order_List.md: "20 requests per 2 seconds").
const maxAlgoListWait = 2 * time.Second

// algoListLimit is the most algo orders OKX lists per request ("The
// maximum is 100. The default is 100", Get_Algo_Order_List.md);
// maxAlgoListPages bounds how far back a close pages.
const (
	algoListLimit    = 100
	maxAlgoListPages = 20
)

// listPendingAlgos lists instID's untriggered swap algo orders of ordType
// (one type, or conditional,oco), every page of them: OKX answers at most
// algoListLimit per request, newest first, and pages back with after =
// the last algoId listed ("records earlier than the requested algoId",
// Get_Algo_Order_List.md). A trader's own algo orders placed after
// hoox's would otherwise push hoox's off the first page. On an error,
// what the pages before it listed is returned with it.
func (v *Venue) listPendingAlgos(ctx context.Context, instID, ordType string) ([]algoPending, error) {
	var all []algoPending
	after := ""
	for range maxAlgoListPages {
		page, err := v.listAlgoPage(ctx, instID, ordType, after)
		all = append(all, page...)
		if err != nil || len(page) < algoListLimit {
			return all, err
		}
		after = page[len(page)-1].AlgoID
	}
	return all, fmt.Errorf("okx: more than %d live %s algo orders on %s: the oldest were not listed", maxAlgoListPages*algoListLimit, ordType, instID)
}

// listAlgoPage lists one page of listPendingAlgos (after: "" for the
// newest). A listing OKX answered with its rate limit (or one held back
// by that pause) is sent once more when the pause ends within
// maxAlgoListWait and before ctx's deadline: a close's exits left live
// for want of a listing can sell the next position.
func (v *Venue) listAlgoPage(ctx context.Context, instID, ordType, after string) ([]algoPending, error) {
	q := url.Values{"ordType": {ordType}, "instType": {"SWAP"}, "instId": {instID}, "limit": {strconv.Itoa(algoListLimit)}}
	if after != "" {
		q.Set("after", after)
	}
	r := request{method: http.MethodGet, path: pathAlgoPending, private: true, query: q}
	for retried := false; ; retried = true {
		var page []algoPending
		err := v.do(ctx, r, &page)
		e, ok := errors.AsType[*APIError](err)
		if err == nil || retried || !ok || e.Class != ClassRateLimited || !v.awaitPause(ctx, r) {
			return page, err
		}
	}
}

// awaitPause waits until the rate-limit pause r is held under ends, and
// reports whether it did within maxAlgoListWait and ctx.
func (v *Venue) awaitPause(ctx context.Context, r request) bool {
	instrument, endpoint := r.pauseKeys()
	now := v.cfg.Now()
	until, paused := v.pauses.Until(now, "", endpoint, instrument)
	if !paused {
		return true
	}
	wait := until.Sub(now)
	if deadline, ok := ctx.Deadline(); wait > maxAlgoListWait || ok && time.Until(deadline) <= wait {
		return false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

var _ exchange.ExitsAfterCloseCanceler = (*Venue)(nil)

// CancelExitsAfterClose implements exchange.ExitsAfterCloseCanceler: the
// second look, once the exits' sends that were on their way during the
// swap close r have ended, for those OKX booked after the close's
// listing. exits are the gateway's: hoox's trailing stops recorded open
// whose legs were planned before the close's intent (their entries filled
// before the close read the position, so they protected what it closed)
// and that the close's own look did not cancel. Each is read by
// algoClOrdId (GET /api/v5/trade/order-algo, Get_Algo_Order_Details.md)
// for its algoId and cancelled while live (POST /api/v5/trade/cancel-algos,
// Post_Cancel_Algo_Order.md), whatever the position is now: an entry
// beside the close, or the sender's next signal, places exits of its own,
// which are not named. One that is no longer live, or that triggered or
// ended meanwhile (51400, 51416), is skipped; what fails is logged.
func (v *Venue) CancelExitsAfterClose(ctx context.Context, o exchange.Order, r exchange.Report, exits []string) []exchange.CancelledOrder {
	if !v.swap() || !r.ClosedPosition {
		return nil
	}
	var cancelled []exchange.CancelledOrder
	for _, id := range exits {
		a, err := v.queryTrailing(ctx, exchange.Order{ClientOrderID: id})
		if errors.Is(err, exchange.ErrNotFound) {
			continue
		}
		if err == nil && a.State != "live" {
			continue // triggered, cancelled or failed: not resting
		}
		if err == nil {
			body := []map[string]string{{"algoId": a.AlgoID, "instId": a.InstID}}
			err = v.do(ctx, request{method: http.MethodPost, path: pathCancelAlgo, body: body, private: true, instID: a.InstID}, nil)
			if e, ok := errors.AsType[*APIError](err); ok && (e.Code == 51400 || algoTriggered(e.Code)) {
				continue // no longer live
			}
		}
		if err != nil {
			v.log.ErrorContext(ctx, "okx: a close left its position gone, but an exit of it that reached OKX after the close was not cancelled",
				"client_order_id", o.ClientOrderID, "exit_client_order_id", id, "error", err)
			continue
		}
		cancelled = append(cancelled, exchange.CancelledOrder{ClientOrderID: id, ExchangeOrderID: a.AlgoID,
			Side: strings.ToLower(a.Side), PlacedByHoox: true})
	}
	return cancelled
}
