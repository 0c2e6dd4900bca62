package okx

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange/internal/venuekit"
)

// Filters are one instrument's trading rules from GET
// /api/v5/account/instruments, in the base currency: for a swap, lotSz and
// minSz (contracts) are multiplied by ctVal, so that a signal's quantity
// is rounded and checked in the unit it is given in.
type Filters struct {
	// InstID is OKX's instrument ID: BTC-USDT, BTC-USDT-SWAP.
	InstID  string
	BaseCcy string
	// QuoteCcy is what an entry spends: quoteCcy on spot, settleCcy on a
	// swap.
	QuoteCcy string
	State    string
	// TickSize is tickSz.
	TickSize decimal.Decimal
	// Step and MinQty are lotSz and minSz in the base currency.
	Step, MinQty decimal.Decimal
	// ContractValue is ctVal (swaps: base currency per contract); zero on
	// spot, where sizes are in the base currency already.
	ContractValue decimal.Decimal
	// MaxMarketQty is maxMktSz in the base currency ("Max order quantity
	// of a single market order", Get_Instruments.md); zero when OKX gives
	// none.
	MaxMarketQty decimal.Decimal
}

// toWire turns a base-currency quantity into OKX's sz: contracts on a
// swap.
func (f Filters) toWire(q decimal.Decimal) decimal.Decimal {
	if f.ContractValue.IsPositive() {
		return q.Div(f.ContractValue)
	}
	return q
}

// fromWire turns OKX's sz (or accFillSz) into the base currency.
func (f Filters) fromWire(sz decimal.Decimal) decimal.Decimal {
	if f.ContractValue.IsPositive() {
		return sz.Mul(f.ContractValue)
	}
	return sz
}

type rawInstrument struct {
	InstID  string `json:"instId"`
	BaseCcy string `json:"baseCcy"`
	QuoteCc string `json:"quoteCcy"`
	Settle  string `json:"settleCcy"`
	CtVal   string `json:"ctVal"`
	CtType  string `json:"ctType"`
	TickSz  string `json:"tickSz"`
	LotSz   string `json:"lotSz"`
	MinSz   string `json:"minSz"`
	MaxMkt  string `json:"maxMktSz"`
	State   string `json:"state"`
}

// instType is the market's instType parameter.
func (v *Venue) instType() string {
	if v.swap() {
		return "SWAP"
	}
	return "SPOT"
}

// compact is a hoox symbol for an instId: BTC-USDT and BTC-USDT-SWAP are
// both BTCUSDT.
func compact(instID string) string {
	return strings.ReplaceAll(strings.TrimSuffix(instID, "-SWAP"), "-", "")
}

// filtersFor returns the rules of the instrument hoox's symbol (BTCUSDT)
// names in this market, from the cache while younger than FilterTTL, else
// from the instruments list (one request for every instrument of the
// type). found is false when OKX lists no such instrument; on the swap
// market only USDT-settled linear swaps count.
func (v *Venue) filtersFor(ctx context.Context, symbol string) (f Filters, found bool, err error) {
	if f, found, ok := v.filters.Get(symbol, v.cfg.Now(), v.cfg.FilterTTL); ok {
		return f, found, nil
	}
	var list []rawInstrument
	q := url.Values{"instType": {v.instType()}}
	if err := v.do(ctx, request{method: http.MethodGet, path: "/api/v5/account/instruments", query: q, private: true}, &list); err != nil {
		return Filters{}, false, fmt.Errorf("okx: instruments: %w", asUnreachable(err))
	}
	now := v.cfg.Now()
	for _, in := range list {
		if v.swap() && (in.Settle != "USDT" || (in.CtType != "" && in.CtType != "linear")) {
			continue
		}
		pf := Filters{InstID: in.InstID, BaseCcy: in.BaseCcy, QuoteCcy: in.QuoteCc, State: in.State, TickSize: venuekit.Dec(in.TickSz),
			Step: venuekit.Dec(in.LotSz), MinQty: venuekit.Dec(in.MinSz), MaxMarketQty: venuekit.Dec(in.MaxMkt)}
		if v.swap() {
			pf.ContractValue = venuekit.Dec(in.CtVal)
			pf.QuoteCcy = in.Settle
			pf.Step, pf.MinQty = pf.Step.Mul(pf.ContractValue), pf.MinQty.Mul(pf.ContractValue)
			pf.MaxMarketQty = pf.MaxMarketQty.Mul(pf.ContractValue)
			if pf.BaseCcy == "" {
				pf.BaseCcy = strings.SplitN(in.InstID, "-", 2)[0]
			}
		}
		v.filters.Put(compact(in.InstID), pf, true, now)
		if compact(in.InstID) == symbol {
			f, found = pf, true
		}
	}
	if !found {
		v.filters.Put(symbol, Filters{}, false, now)
	}
	return f, found, nil
}

// dropFilters forgets symbol's rules after OKX refused an order on one.
func (v *Venue) dropFilters(symbol string) { v.filters.Drop(symbol) }
