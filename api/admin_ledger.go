package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/signal"
)

// ledgerEntry is one entry of the spot ledger as the admin API shows it:
// what a strategy holds of a symbol through hoox, which its spot close
// sells.
type ledgerEntry struct {
	Exchange  string    `json:"exchange"`
	Mode      string    `json:"mode"`
	Symbol    string    `json:"symbol"`
	Strategy  string    `json:"strategy"`
	Quantity  string    `json:"quantity"`
	UpdatedAt time.Time `json:"updated_at"`
	UpdatedBy string    `json:"updated_by"`
	// ReleasedSells, in PUT's answer only, are the entry's sells that had
	// ended failed with their order unknown and no longer count as sold
	// (db.SetLedger).
	ReleasedSells []releasedSell `json:"released_sells,omitempty"`
}

// releasedSell is one sell whose reservation a PUT /admin/ledger ended.
type releasedSell struct {
	TraceID       string `json:"trace_id"`
	ClientOrderID string `json:"client_order_id"`
	Role          string `json:"role"`
	Quantity      string `json:"quantity"`
}

func newLedgerEntry(e db.LedgerEntry) ledgerEntry {
	out := ledgerEntry{Exchange: e.Exchange, Mode: e.Mode, Symbol: e.Symbol, Strategy: e.Strategy,
		Quantity: e.Quantity.String(), UpdatedAt: e.UpdatedAt.UTC(), UpdatedBy: e.UpdatedBy}
	for _, r := range e.Released {
		out.ReleasedSells = append(out.ReleasedSells, releasedSell{TraceID: r.TraceID, ClientOrderID: r.ClientOrderID,
			Role: r.Role, Quantity: r.Quantity})
	}
	return out
}

// ledgerPage is GET /admin/ledger.
type ledgerPage struct {
	Entries []ledgerEntry `json:"entries"`
}

// listLedger shows the spot ledger, filtered by exchange, mode, symbol
// and strategy (strategy= with no value selects signals without one).
func (a *Admin) listLedger(c echo.Context) error {
	var f db.LedgerFilter
	for name, vals := range c.QueryParams() {
		if len(vals) != 1 {
			return problem(codes.InvalidRequest, fmt.Sprintf("query parameter %s is given %d times", name, len(vals)))
		}
		v := vals[0]
		// The filters follow the rules PUT /admin/ledger and signals
		// store by, so a filter matches what they stored and text
		// Postgres cannot store (a NUL, invalid UTF-8) is refused here,
		// not failed in the query. A blank filter matches everything.
		switch name {
		case "exchange":
			if v == "" {
				continue
			}
			ex, msg := signal.NormalizeExchange(v)
			if msg != "" {
				return problem(codes.InvalidRequest, "query parameter exchange "+msg)
			}
			f.Exchange = ex
		case "mode":
			if v != "live" && v != "test" {
				return problem(codes.InvalidRequest, "mode must be live or test")
			}
			f.Mode = v
		case "symbol":
			if v == "" {
				continue
			}
			sym, msg := signal.NormalizeSymbol(v)
			if msg != "" {
				return problem(codes.InvalidRequest, "query parameter symbol "+msg)
			}
			f.Symbol = sym
		case "strategy":
			if msg := signal.CheckText(v); msg != "" {
				return problem(codes.InvalidRequest, "query parameter strategy "+msg)
			}
			f.Strategy, f.HasStrategy = v, true
		default:
			return problem(codes.InvalidRequest, fmt.Sprintf("unknown query parameter %q (accepted: exchange, mode, symbol, strategy)", name))
		}
	}
	rows, err := db.ListLedger(c.Request().Context(), a.db(), f)
	if err != nil {
		return err
	}
	return adminJSON(c, http.StatusOK, ledgerPage{Entries: items(rows, newLedgerEntry)})
}

// ledgerRequest is PUT /admin/ledger: set one entry (quantity "0" resets
// it). Quantity is raw so it can be a decimal string or a JSON number,
// read exactly either way.
type ledgerRequest struct {
	Exchange string          `json:"exchange"`
	Mode     string          `json:"mode"`
	Symbol   string          `json:"symbol"`
	Strategy *string         `json:"strategy"`
	Quantity json.RawMessage `json:"quantity"`
	// Was, when given, is the value the set replaces, as GET showed it:
	// if a fill moved the entry since, the set is refused (409
	// ledger_changed) rather than overwriting the fill.
	Was    json.RawMessage `json:"was"`
	Reason string          `json:"reason"`
}

// putLedger sets what a strategy holds of a symbol through hoox, on an
// operator's word (a manual trade, a withdrawal, holdings bought before
// hoox); the change is audited under trace admin:ledger. The exchange must
// name a configured account (venues) or one the ledger already holds.
func (a *Admin) putLedger(venues *exchange.Registry) echo.HandlerFunc {
	return func(c echo.Context) error {
		return a.setLedger(c, venues)
	}
}

func (a *Admin) setLedger(c echo.Context, venues *exchange.Registry) error {
	if err := checkQuery(c); err != nil {
		return err
	}
	var req ledgerRequest
	if err := decodeAdminBody(c, &req, true); err != nil {
		return err
	}
	k, qty, err := req.validate()
	if err != nil {
		return err
	}
	if err := a.checkLedgerExchange(c, venues, k.Exchange); err != nil {
		return err
	}
	var was *decimal.Decimal
	if len(req.Was) > 0 {
		w, msg := ledgerQuantity(req.Was)
		if msg != "" {
			return problem(codes.InvalidRequest, "was "+msg)
		}
		was = &w
	}
	e, err := db.SetLedgerIf(c.Request().Context(), a.db(), k, was, qty, req.Reason, "admin")
	var changed *db.LedgerChangedError
	if errors.As(err, &changed) {
		return problem(codes.LedgerChanged, fmt.Sprintf("the entry holds %s now, not the %s named as was: a fill or another set moved it since; "+
			"nothing was set (check the venue, then set it naming %s)", changed.Quantity, was.String(), changed.Quantity))
	}
	if err != nil {
		return err
	}
	return adminJSON(c, http.StatusOK, newLedgerEntry(e))
}

// checkLedgerExchange refuses an entry under an exchange that no venue or
// account is configured for: no signal reads it, so a typo ("binanse")
// would leave the operator believing a strategy's holdings were set while
// its spot close still sells what the real entry says. An exchange the
// ledger already holds stays settable, though no longer configured: an
// account removed from the configuration keeps its entries, and the
// operator must be able to correct or reset them.
func (a *Admin) checkLedgerExchange(c echo.Context, venues *exchange.Registry, name string) error {
	var names []string
	if venues != nil {
		if _, ok := venues.Get(name); ok {
			return nil
		}
		names = venues.Names()
	}
	held, err := db.LedgerHasExchange(c.Request().Context(), a.db(), name)
	if err != nil {
		return err
	}
	if held {
		return nil
	}
	return problem(codes.InvalidRequest, fmt.Sprintf("exchange %q is not a configured venue or account (configured: %s), "+
		"and the ledger holds no entry under it; nothing was set", name, strings.Join(names, ", ")))
}

// validate checks every field, so a bad body changes nothing. Exchange,
// symbol and strategy follow a signal's rules and are normalised as a
// signal's are (exchange lower-case, symbol upper-case): the spot close
// reads the entry under the signal's values, so an entry stored under any
// other spelling would never be read.
func (r ledgerRequest) validate() (db.LedgerKey, decimal.Decimal, error) {
	bad := func(msg string) (db.LedgerKey, decimal.Decimal, error) {
		return db.LedgerKey{}, decimal.Zero, problem(codes.InvalidRequest, msg)
	}
	ex, exMsg := signal.NormalizeExchange(r.Exchange)
	symbol, symMsg := signal.NormalizeSymbol(r.Symbol)
	switch {
	case r.Exchange == "":
		return bad("exchange is required: the signals' exchange (or account), as GET /admin/ledger shows it")
	case exMsg != "":
		return bad("exchange " + exMsg)
	case r.Mode != "live" && r.Mode != "test":
		return bad(`mode is required: "live" or "test"`)
	case r.Symbol == "":
		return bad("symbol is required, as the venue spells it and GET /admin/ledger shows it")
	case symMsg != "":
		return bad("symbol " + symMsg)
	case r.Strategy == nil:
		return bad(`strategy is required: the signals' strategy field, "" for signals without one`)
	case signal.CheckText(*r.Strategy) != "":
		return bad("strategy " + signal.CheckText(*r.Strategy))
	case signal.CheckText(r.Reason) != "":
		return bad("reason " + signal.CheckText(r.Reason))
	case len(r.Quantity) == 0:
		return bad(`quantity is required: a decimal string such as "0.5"; "0" resets the entry`)
	}
	qty, msg := ledgerQuantity(r.Quantity)
	if msg != "" {
		return bad("quantity " + msg)
	}
	return db.LedgerKey{Exchange: ex, Mode: r.Mode, Symbol: symbol, Strategy: *r.Strategy}, qty, nil
}

// ledgerQuantity reads a ledger quantity, a decimal string or a JSON
// number, exactly; the message says what is wrong with it ("" when
// nothing is).
func ledgerQuantity(raw json.RawMessage) (decimal.Decimal, string) {
	text := string(raw)
	if strings.HasPrefix(text, `"`) {
		if err := json.Unmarshal(raw, &text); err != nil {
			return decimal.Zero, "must be a decimal string or number"
		}
	}
	qty, err := decimal.NewFromString(text)
	switch {
	case err != nil || strings.ContainsAny(text, "eE"):
		return decimal.Zero, "must be a plain decimal, such as \"0.5\""
	case qty.IsNegative():
		return decimal.Zero, "must not be negative"
	case qty.Exponent() < -18 && !qty.Equal(qty.Truncate(18)):
		return decimal.Zero, "has more than 18 decimals"
	case len(qty.Truncate(0).Abs().String()) > 20:
		return decimal.Zero, "has more than 20 integer digits"
	}
	return qty, ""
}
