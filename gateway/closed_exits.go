package gateway

import (
	"context"
	"time"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/signal"
)

// exitsAfterClose finishes, once close order is recorded filled, what its
// venue began when it reported the position gone (report.ClosedPosition:
// it cancelled the exits it found resting, Binance USDⓈ-M and OKX swap).
// An exit of that position whose send was on its way then — armed by its
// entry's pass, not at the venue yet when the close looked — would land
// after and rest on the flat position (or, on OKX, which refuses a
// reduce-only stop with nothing to reduce, on the sender's next long), to
// cut the symbol's next one. So, as a
// cancel signal does (MarkCancelledExitLegs), the exits' legs planned
// before the close are locked (a pass sending one finishes first) and
// those whose order is still unknown are marked (never sent again,
// cancelled by the leg runner if found); then the exits of those legs
// recorded open that the close's own look did not cancel are cancelled at
// the venue by ID (CancelExitsAfterClose) — they protected the position
// the close closed, whatever entry has filled since.
//
// It runs off the answer's path, in the background group Close waits
// for: the close has filled and is recorded, nothing here changes its
// answer, and the marking may wait up to the venue timeout for another
// entry's exit send. What fails is logged; an exit left resting is then
// the trader's to see (README).
func (s *Service) exitsAfterClose(ctx context.Context, in Input, order exchange.Order, row db.OrderRow, report exchange.Report) {
	if !report.ClosedPosition || !exchange.IsClose(order.Action) {
		return
	}
	venue, ok := s.deps.Venues.For(in.Signal.Exchange, in.Signal.Test)
	if !ok {
		return
	}
	again, ok := venue.(exchange.ExitsAfterCloseCanceler)
	if !ok {
		return
	}
	// Detached from the request: the close is recorded, and a sender that
	// hung up must not leave its exits resting.
	ctx = context.WithoutCancel(ctx)
	s.background.Add(1)
	go func() {
		defer s.background.Done()
		s.closedPositionExits(ctx, in.Trace, in.Signal.Exchange, order, row, report, again)
	}()
}

// closedPositionExits is exitsAfterClose's work, on its own goroutine.
func (s *Service) closedPositionExits(ctx context.Context, tr signal.Trace, exchangeName string, order exchange.Order, row db.OrderRow, report exchange.Report, again exchange.ExitsAfterCloseCanceler) {
	ctx, cancel := context.WithTimeout(ctx, 2*s.cfg.Timing.VenueTimeout+5*time.Second)
	defer cancel()
	first := make([]string, 0, len(report.CancelledFirst))
	for _, c := range report.CancelledFirst {
		first = append(first, c.ClientOrderID)
	}
	// The exits of a long are sells, as its close is.
	found, err := db.MarkClosedExitLegs(ctx, s.deps.Pool, s.cfg.Timing.VenueTimeout, exchangeName, tr.Mode,
		row.Symbol, report.Side, order.ClientOrderID, tr.ID, first, order.Partial && report.EntryBeside)
	if err != nil {
		s.deps.Logger.ErrorContext(ctx, "a close left its position gone, but the exits being placed for it could not be marked; one may be left resting",
			"trace_id", tr.ID, "client_order_id", order.ClientOrderID, "symbol", row.Symbol, "error", err)
		return
	}
	if len(found.Marked) > 0 {
		s.deps.Logger.InfoContext(ctx, "a close left its position gone: exits whose order is not known yet marked, to be cancelled if found",
			"trace_id", tr.ID, "client_order_id", order.ClientOrderID, "marked", len(found.Marked))
	}
	if len(found.Resting) == 0 {
		return
	}
	vctx, cancel := context.WithTimeout(ctx, s.cfg.Timing.VenueTimeout)
	defer cancel()
	if cancelled := again.CancelExitsAfterClose(vctx, order, report, found.Resting); len(cancelled) > 0 {
		s.deps.Logger.WarnContext(ctx, "a close left its position gone: exits that reached the venue after it cancelled",
			"trace_id", tr.ID, "client_order_id", order.ClientOrderID, "cancelled", len(cancelled))
	}
}
