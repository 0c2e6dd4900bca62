package okx

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/internal/venuekit"
)

// pathAlgoPending lists the account's untriggered algo orders of one
// ordType (Get_Algo_Order_List.md).
const pathAlgoPending = "/api/v5/trade/orders-algo-pending"

// flattens reports whether close o is meant to leave no position: a close
// of all of it, a percent_of_position close of 100 % (or more) of it, or
// the first part of either split over maxMktSz (Split set: the other
// parts follow it). A percent_of_position exit of less and a later part of
// a split close (Partial, no Split, no Sizing) leave some of the position
// open, or may.
func flattens(o exchange.Order) bool {
	return !o.Partial || (o.Split != nil && o.Sizing == nil) || exchange.WholePosition(o.Sizing)
}

// cancelClosedTrailing cancels hoox's trailing stops left live on the side
// of instID that a filled swap close of the whole position just closed
// (side is the close's: sell for a long's). hoox places an entry's
// trailing stop after the fill as its own reduce-only move_order_stop
// (trailing.go). OKX cancels a TP/SL algo order "when the position is
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
// (Get_Algo_Order_List.md, ordType move_order_stop, instType SWAP and
// instId: the untriggered ones, with algoClOrdId, side, reduceOnly and
// cTime) and cancelled one by one by algoId with POST
// /api/v5/trade/cancel-algos (Post_Cancel_Algo_Order.md). Only reduce-only
// stops of side whose algoClOrdId carries hoox's prefix are cancelled: an
// algo order the trader placed by hand is theirs to keep. 51400 (no longer
// live: cancelled meanwhile) and 51416 (triggered first) are skipped.
//
// The close has filled: nothing here may fail it. What could not be listed
// or cancelled is logged; the stop's follow job keeps looking at it.
//
// Signals of one instrument are not run one at a time: an entry may fill
// beside the close. So the stops are listed first and the position read
// after. Flat, every listed stop protects nothing and is cancelled. Not
// flat, only the stops created by the time the close began (started, on
// OKX's clock, before the close read the position) are cancelled: they
// protected the position it closed; a stop created since is the new
// entry's. An entry filling after the position read places its stop after
// the listing: it is not in it.
func (v *Venue) cancelClosedTrailing(ctx context.Context, f Filters, side, closeID string, started time.Time) []exchange.CancelledOrder {
	instID := f.InstID
	var open []struct {
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
	q := url.Values{"ordType": {"move_order_stop"}, "instType": {"SWAP"}, "instId": {instID}}
	if err := v.do(ctx, request{method: http.MethodGet, path: pathAlgoPending, query: q, private: true}, &open); err != nil {
		v.log.ErrorContext(ctx, "okx: a close of the whole position filled, but its side's live trailing stops could not be listed to cancel them",
			"client_order_id", closeID, "inst_id", instID, "error", err)
		return nil
	}
	pos, err := v.netPosition(ctx, instID)
	switch {
	case err != nil:
		v.log.ErrorContext(ctx, "okx: a close of the whole position filled, but the position could not be read again to cancel its side's trailing stops",
			"client_order_id", closeID, "inst_id", instID, "error", err)
		return nil
	case !pos.IsZero():
		v.log.WarnContext(ctx, "okx: a close of the whole position filled, but a position is open again (an entry beside it): only the trailing stops created before the close are cancelled",
			"client_order_id", closeID, "inst_id", instID, "position", pos.String())
	}
	flat := pos.IsZero()
	var cancelled []exchange.CancelledOrder
	for _, a := range open {
		created, _ := strconv.ParseInt(a.CTime, 10, 64)
		if a.InstID != instID || a.OrdType != "move_order_stop" || a.ReduceOnly != "true" || !strings.EqualFold(a.Side, side) ||
			!strings.HasPrefix(a.AlgoClOrdID, "hx") || (!flat && created > started.UnixMilli()) {
			continue
		}
		body := []map[string]string{{"algoId": a.AlgoID, "instId": instID}}
		err := v.do(ctx, request{method: http.MethodPost, path: pathCancelAlgo, body: body, private: true, instID: instID}, nil)
		if e, ok := errors.AsType[*APIError](err); ok && (e.Code == 51400 || algoTriggered(e.Code)) {
			continue // no longer live
		}
		if err != nil {
			v.log.ErrorContext(ctx, "okx: a close of the whole position filled, but a live trailing stop of its side was not cancelled",
				"client_order_id", closeID, "inst_id", instID, "exit_client_order_id", a.AlgoClOrdID, "error", fmt.Errorf("cancel algo %s: %w", a.AlgoID, err))
			continue
		}
		cancelled = append(cancelled, exchange.CancelledOrder{ClientOrderID: a.AlgoClOrdID, ExchangeOrderID: a.AlgoID,
			Side: strings.ToLower(a.Side), Remaining: f.fromWire(venuekit.Dec(a.Sz)).String(), PlacedByHoox: true})
	}
	if len(cancelled) > 0 {
		v.log.InfoContext(ctx, "okx: a close of the whole position filled; its side's live trailing stops cancelled",
			"client_order_id", closeID, "inst_id", instID, "cancelled", len(cancelled))
	}
	return cancelled
}
