package gateway

import (
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/signal"
)

// attachedOf carries a signal's attached-exit target into the order.
func attachedOf(t *signal.Target) *exchange.Attached {
	if t == nil {
		return nil
	}
	return &exchange.Attached{Price: t.Price, Percent: t.Percent, Distance: t.Distance}
}

// withAttachments sets o's attached exits from sig, as asked: percent
// targets are resolved later, once, before the intent (see size).
func withAttachments(o exchange.Order, sig signal.Signal) exchange.Order {
	o.TakeProfit = attachedOf(sig.TakeProfit)
	o.StopLoss = attachedOf(sig.StopLoss)
	o.TrailingStop = attachedOf(sig.TrailingStop)
	return o
}

// canAttach refuses, before anything is claimed, a signal whose attached
// exits the venue cannot take (422 unsupported: nothing changed). The
// venue decides through exchange.AttachmentCapable; one that does not
// implement it takes none.
func canAttach(sig signal.Signal, venue exchange.Venue) error {
	if !sig.HasAttachments() {
		return nil
	}
	o := withAttachments(exchange.Order{Symbol: sig.Symbol, Action: sig.Action, Side: sig.Side,
		OrderType: sig.OrderType, Quantity: sig.Quantity, Price: sig.Price, Test: sig.Test}, sig)
	if reason := exchange.RefuseAttachments(venue, sig.Exchange, o); reason != "" {
		return &Error{Code: codes.Unsupported, Detail: reason}
	}
	return nil
}
