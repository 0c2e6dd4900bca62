package exchange

import (
	"context"
	"fmt"
	"time"

	"github.com/shopspring/decimal"
)

// Quantity types a signal may size its order by (signal.Quantity…): the
// gateway resolves every one but QuantityBase through a Sizer, once, before
// the attempt's intent is written.
const (
	QuantityBase              = "base"
	QuantityQuote             = "quote"
	QuantityPercentOfBalance  = "percent_of_balance"
	QuantityPercentOfPosition = "percent_of_position"
)

// SizingNeed says which of the venue's facts a quantity type needs, so a
// venue reads only those.
type SizingNeed struct {
	// Price is the symbol's last price (quote, percent_of_balance of a
	// market order).
	Price bool
	// Balance is the free balance of the symbol's quote asset
	// (percent_of_balance).
	Balance bool
	// Position is the position to take a share of (percent_of_position).
	Position bool
}

// SizingFacts are what a venue said when asked to size an order.
type SizingFacts struct {
	// Price is the symbol's last price, in the quote asset per base unit.
	Price decimal.Decimal
	// QuoteAsset names the asset FreeQuote counts (USDT).
	QuoteAsset string
	// FreeQuote is the free balance of QuoteAsset: what an entry may
	// spend (on derivatives, the available margin balance).
	FreeQuote decimal.Decimal
	// Position is the position in base units, signed (short < 0); on spot,
	// the free balance of the base asset: the most a close can sell.
	Position decimal.Decimal
	// Step and MinQty are the symbol's quantity step and minimum for the
	// order's type, in base units (zero: none).
	Step, MinQty decimal.Decimal
	// MaxMarketQty is the largest quantity one market order may carry
	// (Binance MARKET_LOT_SIZE maxQty); zero when the venue has none or
	// splits large orders itself.
	MaxMarketQty decimal.Decimal
	// Tick is the symbol's price step (zero: none), which attached
	// exits' triggers are rounded to.
	Tick decimal.Decimal
	// Refused, when set, is why the venue will not take an order for the
	// symbol at all (unknown, not trading): refused for good, nothing sent.
	Refused string
	// PositionReadAt is the venue's time (as the adapter reckons it) just
	// before it read Position, where it knows it (Binance USDⓈ-M, OKX
	// swap); zero otherwise. A close sized from that read closes what was
	// held then: an exit the venue created after it belongs to an entry
	// that filled beside the close (see Sizing.PositionReadAt).
	PositionReadAt time.Time
	// Ledger, valid on a spot venue, is what the strategy holds through
	// hoox (the spot ledger): a spot exit takes its share of the smaller
	// of Ledger and Position (the free BaseAsset balance), never of coins
	// the strategy did not buy.
	Ledger    decimal.NullDecimal
	BaseAsset string
	// Unrecorded is what the strategy's sells of the holding that were
	// sent but not yet recorded may have sold: counted as sold.
	Unrecorded decimal.Decimal
}

// Sizer is implemented by a venue that can size an order from what the
// account holds: the gateway asks it once, under the trace's claim and
// before the intent, and stores the resolved order in the intent so that
// every recovery path (resend, reconcile, sweep) re-uses that size.
type Sizer interface {
	// SizingFacts reads the facts need asks for, about o's symbol. An
	// error means nothing was sent (wrap ErrUnreachable).
	SizingFacts(ctx context.Context, o Order, need SizingNeed) (SizingFacts, error)
	// ReadsBalance reports whether the venue has a free quote balance to
	// read (percent_of_balance); paper has none.
	ReadsBalance() bool
}

// Sizing records how an order's quantity was resolved from a signal's
// quantity type: it travels with the order into the intent and every audit
// event that records the order, so the audit shows why a size was chosen.
type Sizing struct {
	// Type is the signal's quantity type; Asked its quantity (a
	// percentage, or an amount of the quote asset).
	Type  string `json:"type"`
	Asked string `json:"asked"`
	// Price, FreeQuote (of QuoteAsset) and Position are what the venue
	// said, when read.
	Price      string `json:"price,omitempty"`
	QuoteAsset string `json:"quote_asset,omitempty"`
	FreeQuote  string `json:"free_quote,omitempty"`
	Position   string `json:"position,omitempty"`
	// On spot, Position is the smaller of Ledger — what the strategy
	// bought through hoox (the spot ledger, read under the close's lock)
	// — and FreeBase, the venue's free balance of BaseAsset: a spot close
	// sells only what the strategy holds, and never more than is there.
	// A spot sell sized percent_of_balance (SpotSell) records FreeBase
	// alone: it sells that share of it.
	Ledger    string `json:"ledger,omitempty"`
	BaseAsset string `json:"base_asset,omitempty"`
	FreeBase  string `json:"free_base,omitempty"`
	// Unrecorded is the quantity of the strategy's sells that were sent
	// but not yet recorded, taken off Ledger (they may have sold it).
	Unrecorded string `json:"unrecorded_sells,omitempty"`
	// Step and MinQty are the venue's lot rules applied.
	Step   string `json:"step,omitempty"`
	MinQty string `json:"min_qty,omitempty"`
	// Unrounded is the computed size before rounding down to Step;
	// Quantity the size sent.
	Unrounded string `json:"unrounded"`
	Quantity  string `json:"quantity"`
	// PositionReadAt is SizingFacts.PositionReadAt of a percent_of_position
	// close: when the venue's position it was sized from was read. A close
	// of 100 % of it that executes in full has closed what was held then;
	// the venue's close of exits after it takes only those created before
	// this time, not those of an entry that filled since.
	PositionReadAt time.Time `json:"position_read_at,omitzero"`
}

// Need is what quantityType needs read for o.
func Need(quantityType string, o Order) SizingNeed {
	limit := o.OrderType == "limit" && o.Price.Valid
	switch {
	case quantityType == QuantityQuote:
		return SizingNeed{Price: !limit}
	case quantityType == QuantityPercentOfBalance && SpotSell(o):
		// A share of the free base asset (Position, on spot), which the
		// sell spends.
		return SizingNeed{Position: true}
	case quantityType == QuantityPercentOfBalance:
		return SizingNeed{Price: !limit, Balance: true}
	case quantityType == QuantityPercentOfPosition:
		return SizingNeed{Position: true}
	}
	return SizingNeed{}
}

var hundred = decimal.NewFromInt(100)

// SpotSell reports whether o sells on a spot venue other than as a close
// (a close sells from the strategy's ledger): it spends the base asset,
// so a percent_of_balance of it is a share of the free base balance. A
// share of the quote balance would ask to sell coins worth that much
// quote, more than the account holds or other strategies' coins.
func SpotSell(o Order) bool {
	return o.Ledger != nil && o.Side == "sell" && !IsClose(o.Action)
}

// Resolve turns o, whose Quantity is the signal's asked amount of
// quantityType, into the order to send: a base quantity rounded down to
// the venue's step (never up). A percent_of_position close becomes a
// partial close (Partial) of that share of the position, on the side that
// reduces it. reason is set, and nothing may be sent, when the size is zero
// or below the venue's minimum, or there is no position to take a share of.
func Resolve(quantityType string, o Order, f SizingFacts) (Order, Sizing, string) {
	asked := o.Quantity
	s := Sizing{Type: quantityType, Asked: asked.String()}
	if f.Refused != "" {
		return o, s, f.Refused
	}
	if !f.Step.IsZero() {
		s.Step = f.Step.String()
	}
	if !f.MinQty.IsZero() {
		s.MinQty = f.MinQty.String()
	}
	price := f.Price
	if o.OrderType == "limit" && o.Price.Valid {
		price = o.Price.Decimal
	}
	var qty decimal.Decimal
	switch {
	case quantityType == QuantityPercentOfBalance && SpotSell(o):
		s.BaseAsset, s.FreeBase = o.Ledger.BaseAsset, f.Position.String()
		qty = f.Position.Mul(asked).Div(hundred)
	case quantityType == QuantityQuote, quantityType == QuantityPercentOfBalance:
		s.Price = price.String()
		if !price.IsPositive() {
			return o, s, "no price to size the order by"
		}
		amount := asked
		if quantityType == QuantityPercentOfBalance {
			s.QuoteAsset, s.FreeQuote = f.QuoteAsset, f.FreeQuote.String()
			amount = f.FreeQuote.Mul(asked).Div(hundred)
		}
		qty = amount.DivRound(price, 18)
	case quantityType == QuantityPercentOfPosition:
		pos := f.Position
		if f.Ledger.Valid {
			s.Ledger, s.FreeBase, s.BaseAsset = f.Ledger.Decimal.String(), f.Position.String(), f.BaseAsset
			held := f.Ledger.Decimal
			if f.Unrecorded.IsPositive() {
				s.Unrecorded = f.Unrecorded.String()
				held = decimal.Max(held.Sub(f.Unrecorded), decimal.Zero)
			}
			pos = decimal.Min(held, f.Position)
			if !pos.IsPositive() {
				s.Position = pos.String()
				reason := fmt.Sprintf("nothing to sell: the strategy holds %s %s through hoox and the free balance is %s", f.Ledger.Decimal, f.BaseAsset, f.Position)
				if f.Unrecorded.IsPositive() {
					reason += fmt.Sprintf(" (sells of %s %s are sent but not recorded yet)", f.Unrecorded, f.BaseAsset)
				}
				return o, s, reason
			}
		}
		s.Position, s.PositionReadAt = pos.String(), f.PositionReadAt
		switch {
		case pos.IsPositive() && o.Action != "close_short":
			o.Side = "sell"
		case pos.IsNegative() && o.Action != "close_long":
			o.Side = "buy"
		default:
			return o, s, "no position to close"
		}
		qty = pos.Abs().Mul(asked).Div(hundred)
		o.Partial = true
	default:
		return o, s, fmt.Sprintf("unknown quantity type %q", quantityType)
	}
	s.Unrounded = qty.String()
	if f.Step.IsPositive() {
		qty = qty.Div(f.Step).Floor().Mul(f.Step)
	}
	qty = qty.Truncate(18)
	s.Quantity = qty.String()
	switch {
	case !qty.IsPositive():
		return o, s, fmt.Sprintf("the %s size %s rounds down to %s (step %s): nothing to send", quantityType, s.Unrounded, qty, f.Step)
	case f.MinQty.IsPositive() && qty.LessThan(f.MinQty):
		return o, s, fmt.Sprintf("the %s size %s is below the venue's minimum quantity %s", quantityType, qty, f.MinQty)
	}
	o.Quantity = qty
	o.Sizing = &s
	return o, s, ""
}
