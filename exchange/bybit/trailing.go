package bybit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
)

var _ exchange.TrailingLegAttacher = (*Venue)(nil)

// TrailsAsLeg is true on linear: a trailing stop is the position's
// trailingStop setting (docs/v5/position/trading-stop.mdx), set once the
// entry filled, so the gateway plans it as a leg while take-profit and
// stop-loss stay on the entry. Spot has no trailing stop (trading-stop
// takes category linear, inverse or option).
func (v *Venue) TrailsAsLeg() bool { return v.cfg.Market == MarketLinear }

var _ exchange.SettingExiter = (*Venue)(nil)

// ExitIsSetting is true for a linear trailing stop: the position's
// trailingStop, which carries no orderLinkId. lookupTrailing can only
// compare distances, so a later entry's trailing stop of the same
// distance reads as this one's.
func (v *Venue) ExitIsSetting(o exchange.Order) bool {
	return v.cfg.Market == MarketLinear && o.Exit == exchange.RoleTrailingStop
}

// tradingStopBody is POST /v5/position/trading-stop's body as hoox sends
// it: the trailing stop only, for the whole position (tpslMode Full: the
// position holds one trailingStop, "the distance from market price",
// position.mdx), one-way mode. activePrice is not sent: the stop trails
// from the moment it is set, as on every venue hoox supports.
type tradingStopBody struct {
	Category     string `json:"category"`
	Symbol       string `json:"symbol"`
	TPSLMode     string `json:"tpslMode"`
	PositionIdx  int    `json:"positionIdx"`
	TrailingStop string `json:"trailingStop"`
}

// codeNotModified is trading-stop's 34040 (error.mdx: "Not modified.
// Indicates you already set this TP/SL value or you didn't pass a required
// parameter"): hoox passes every required parameter, so the position
// already holds the value sent.
const codeNotModified = 34040

// trailingDistance is the distance o's trailing stop is sent with: the
// leg runner resolved it (a percent from the fill price) and rounded it
// down to the tick before the leg's intent.
func trailingDistance(o exchange.Order) (decimal.Decimal, string) {
	if o.TrailingStop == nil || !o.TrailingStop.Distance.Valid || !o.TrailingStop.Distance.Decimal.IsPositive() {
		return decimal.Zero, fmt.Sprintf("trailing stop %s carries no resolved distance", o.ClientOrderID)
	}
	return o.TrailingStop.Distance.Decimal, ""
}

// placeTrailing sets the position's trailing stop to o's distance. The
// setting has no ID of its own: it is idempotent (the same distance set
// twice is one setting; Bybit answers the second 34040, which placeTrailing
// answers by reading the position), and the leg's client order ID only
// names it in hoox's records. The position is read first: one on the
// other side (the entry only reduced it) is not the entry's to protect
// (rejected, nothing sent). A refusal while the position is open (a
// distance off the tick) is a rejected Report; a refusal without a
// position, like a lost answer, is an error, and the leg runner looks the
// setting up later (lookupTrailing).
func (v *Venue) placeTrailing(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	sym := exchange.VenueSymbol(o.Symbol)
	d, reason := trailingDistance(o)
	if reason == "" && v.cfg.Market != MarketLinear {
		reason = ReasonTrailingStop
	}
	if reason != "" {
		return rejected(reason), nil
	}
	pos, err := v.readPosition(ctx, sym)
	if err != nil {
		return exchange.Report{}, fmt.Errorf("bybit trailing stop %s: %w", o.ClientOrderID, err)
	}
	if pos.size.IsPositive() && pos.side != positionSide(o) {
		// One-way mode holds one position per symbol: the entry only
		// reduced a position on the other side, and a trailing stop set
		// now would protect that one instead.
		r := trailingReport(o, sym, exchange.StatusRejected, d)
		r.Reason = fmt.Sprintf("the %s position is a %s: the entry opened no %s position to trail", sym, pos.side, positionSide(o))
		return r, nil
	}
	body := tradingStopBody{Category: string(MarketLinear), Symbol: sym, TPSLMode: "Full", TrailingStop: d.String()}
	err = v.do(ctx, request{method: http.MethodPost, path: "/v5/position/trading-stop", body: body, private: true, placement: true}, nil)
	var e *APIError
	switch {
	case err == nil:
		return trailingReport(o, sym, exchange.StatusOpen, d), nil
	case errors.As(err, &e) && e.Code == codeNotModified:
		return v.lookupTrailing(ctx, o)
	case errors.As(err, &e) && e.Refused():
		v.log.InfoContext(ctx, "bybit refused the trailing stop", slog.String("client_order_id", o.ClientOrderID),
			slog.String("symbol", sym), slog.Int("ret_code", e.Code), slog.String("ret_msg", e.Msg))
		if pos, perr := v.readPosition(ctx, sym); perr != nil || !pos.size.IsPositive() {
			// Refused for want of a position: the entry's fill may not
			// show in the position yet (Bybit creates orders
			// asynchronously), or the position closed already. Neither
			// is a refusal for good: the leg stays sent, and the next
			// pass reads the position — expired if it is gone, set
			// again after the accept window if it is open.
			return exchange.Report{}, fmt.Errorf("bybit trailing stop %s: refused without a position (%s), to be decided by the next look", o.ClientOrderID, e.Msg)
		}
		r := trailingReport(o, sym, exchange.StatusRejected, d)
		r.Reason = e.Msg
		return r, nil
	}
	return exchange.Report{}, fmt.Errorf("bybit trailing stop %s: %w", o.ClientOrderID, err)
}

// positionSide is the side ("Buy" or "Sell") of the position o's trailing
// stop protects: o is the exit, on the opposite side of the entry.
func positionSide(o exchange.Order) string {
	if o.Side == "buy" {
		return "Sell"
	}
	return "Buy"
}

// trailingReport is the Report of o's trailing stop on sym.
func trailingReport(o exchange.Order, sym string, st exchange.Status, d decimal.Decimal) exchange.Report {
	return exchange.Report{Symbol: sym, Side: o.Side, Quantity: o.Quantity, Status: st,
		TrailingDistance: decimal.NullDecimal{Decimal: d, Valid: true}}
}

// ReasonPositionClosed is why a trailing stop is recorded expired: Bybit
// cancels it "if the position is closed" (trading-stop.mdx), whether it
// triggered or the position was closed otherwise, and the position list
// no longer says which.
const ReasonPositionClosed = "the position closed: Bybit drops a position's trailing stop with it (whether it triggered or the position was closed otherwise)"

// lookupTrailing reads the position's trailing stop (position list,
// trailingStop) for o's trailing leg:
//   - o's distance on an open position: the setting is o's (open);
//   - no position, or one on the other side: whatever was set went with
//     the position, and nothing can be set on it any more (Bybit refuses
//     a trailing stop on a zero position): expired, final, never sent
//     again;
//   - an open position without a trailing stop: ErrNotFound (the leg
//     runner waits out the accept window, then sends it again: setting the
//     same distance twice is one setting);
//   - another distance: ErrMismatch, not adopted. It does not say o's
//     setting ended: only a later leg of the same position, which the
//     caller knows and the venue does not, makes it replaced
//     (db.LaterSettingLeg); without one it was never applied, or a hand
//     changed it.
func (v *Venue) lookupTrailing(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	sym := exchange.VenueSymbol(o.Symbol)
	d, reason := trailingDistance(o)
	if reason != "" {
		return exchange.Report{}, fmt.Errorf("bybit lookup %s: %w: %s", o.ClientOrderID, exchange.ErrMismatch, reason)
	}
	pos, err := v.readPosition(ctx, sym)
	if err != nil {
		return exchange.Report{}, fmt.Errorf("bybit lookup %s: %w", o.ClientOrderID, err)
	}
	switch {
	case !pos.size.IsPositive() || pos.side != positionSide(o):
		// Flat, or flipped to the other side (which closed the position
		// the trailing stop protected first).
		r := trailingReport(o, sym, exchange.StatusExpired, d)
		r.Reason = ReasonPositionClosed
		return r, nil
	case pos.trailing.Equal(d):
		return trailingReport(o, sym, exchange.StatusOpen, d), nil
	case pos.trailing.IsZero():
		return exchange.Report{}, fmt.Errorf("bybit lookup %s: the position holds no trailing stop: %w", o.ClientOrderID, exchange.ErrNotFound)
	}
	// Another distance: Bybit keeps one trailing stop per position and
	// it carries no ID, so the position cannot say whether o's was
	// replaced (a later leg of hoox's set its own since), never applied
	// (a request that failed), or changed by hand. The caller, which
	// knows the position's later legs, decides (jobs: a mismatch of a
	// setting).
	return exchange.Report{}, fmt.Errorf("bybit lookup %s: %w: the position trails by %s, not %s", o.ClientOrderID, exchange.ErrMismatch, pos.trailing, d)
}

// cancelTrailing removes o's trailing stop (trailingStop 0: "0 means
// cancel TS") only while the position holds o's distance: a distance set
// since belongs to another signal (or a hand) and is left alone, and a
// closed position took the setting with it. Either way o's own setting is
// no longer live: reported expired, not cancelled by this request.
func (v *Venue) cancelTrailing(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	held, err := v.lookupTrailing(ctx, o)
	switch {
	case errors.Is(err, exchange.ErrNotFound), errors.Is(err, exchange.ErrMismatch):
		d, _ := trailingDistance(o)
		r := trailingReport(o, exchange.VenueSymbol(o.Symbol), exchange.StatusExpired, d)
		r.Reason = "the position no longer holds this trailing stop"
		return r, nil
	case err != nil:
		return exchange.Report{}, fmt.Errorf("bybit cancel %s: %w", o.ClientOrderID, err)
	case held.Status != exchange.StatusOpen:
		return held, nil
	}
	body := tradingStopBody{Category: string(MarketLinear), Symbol: held.Symbol, TPSLMode: "Full", TrailingStop: "0"}
	err = v.do(ctx, request{method: http.MethodPost, path: "/v5/position/trading-stop", body: body, private: true}, nil)
	e, isAPI := errors.AsType[*APIError](err)
	switch {
	case err == nil, isAPI && e.Code == codeNotModified:
	case isAPI && e.Refused():
		// The position closed in between (a refusal on a zero position):
		// read it again.
		return v.lookupTrailing(ctx, o)
	default:
		return exchange.Report{}, fmt.Errorf("bybit cancel %s: %w", o.ClientOrderID, err)
	}
	held.Status = exchange.StatusCancelled
	return held, nil
}
