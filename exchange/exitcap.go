package exchange

import (
	"context"
	"fmt"
)

// ExitCap is one venue cap on the exit orders resting on a symbol, as read
// before a signal's intent: the cap, how many count against it now, and how
// many the signal's exits would add. The order carries it (Order.ExitCaps)
// into its intent and audit events, so an operator sees why an entry was
// placed or refused.
type ExitCap struct {
	// Filter is the venue's name for the cap (Binance MAX_NUM_ALGO_ORDERS).
	Filter string `json:"filter"`
	Symbol string `json:"symbol"`
	// Counted names what the cap counts ("stop/take-profit orders",
	// "orders").
	Counted string `json:"counted"`
	// Limit is the most the venue lets rest on the symbol.
	Limit int `json:"limit"`
	// Open is how many count against the cap when it was read.
	Open int `json:"open"`
	// Adds is how many the signal's exits would add.
	Adds int `json:"adds"`
	// EachExit says every exit hoox places counts against the cap as one
	// (Binance USDⓈ-M: each is one algo order), and AllSymbols that the
	// cap is the account's, across every symbol: the gateway then adds
	// Planned, hoox's own exits not at the venue yet.
	EachExit   bool `json:"-"`
	AllSymbols bool `json:"-"`
	// Planned is how many exits hoox has planned but not sent on the
	// cap's scope — legs not sent yet, and the exits of entries still
	// resting (a limit entry's are placed once it fills) — which Open, the
	// venue's count, cannot see yet.
	Planned int `json:"planned,omitempty"`
}

// Fits reports whether the signal's exits fit under the cap.
func (c ExitCap) Fits() bool { return c.Open+c.Planned+c.Adds <= c.Limit }

// Refusal says why an entry with exits that do not fit is not sent.
func (c ExitCap) Refusal() string {
	planned := ""
	if c.Planned > 0 {
		planned = fmt.Sprintf(" (and hoox has %d more planned for entries not filled yet)", c.Planned)
	}
	return fmt.Sprintf("%s allows %d open %s on %s and %d are open%s, so the entry's exits (%d more) would be refused "+
		"once it filled, leaving the position without them; cancel orders you no longer need, or send the entry without take_profit/stop_loss",
		c.Filter, c.Limit, c.Counted, c.Symbol, c.Open, planned, c.Adds)
}

// ExitCapper is implemented by a venue that caps the conditional (exit)
// orders resting per symbol and refuses one more only once the entry has
// filled (Binance: exits are separate orders placed after the fill). The
// gateway reads the caps before the entry's intent and refuses an entry
// whose exits would not fit (nothing sent), rather than open a position
// whose stop-loss the venue then refuses.
type ExitCapper interface {
	// ExitCaps reads the venue's caps for o's symbol and counts what o's
	// attached exits would add; empty when the venue publishes no cap for
	// the symbol. An error means the venue could not be asked.
	ExitCaps(ctx context.Context, o Order) ([]ExitCap, error)
}
