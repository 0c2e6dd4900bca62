package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/exchange/venues"
)

// AccountSettings configure one named account (HOOX_ACCOUNTS or
// HOOX_ACCOUNTS_FILE in cmd/hoox): several may trade on one venue, each
// with its own keys, and a signal names them with "account" or
// "accounts". Its String and LogValue name it and never show a credential.
type AccountSettings struct {
	// Name is what a signal's account field says: 1–32 of a-z, 0-9, _
	// and -. It may be a venue's name only on that venue, as its default
	// account (then HOOX_<VENUE>_API_KEY must be unset).
	Name string `json:"name"`
	// Venue is a venue kind: venues.Names() or paper.
	Venue         string `json:"venue"`
	APIKey        string `json:"api_key"`
	APISecret     string `json:"api_secret"`
	APIPassphrase string `json:"api_passphrase"`
	// BaseURL overrides where requests go, as HOOX_<VENUE>_BASE_URL does
	// (a fake in tests, a proxy); empty: production, or the testnet.
	BaseURL string `json:"base_url"`
	// Testnet sends the account's signals to the venue's testnet.
	Testnet bool `json:"testnet"`
}

// String names the account without its credentials.
func (a AccountSettings) String() string { return fmt.Sprintf("account %q (%s)", a.Name, a.Venue) }

// GoString is String, so %#v never prints a credential either.
func (a AccountSettings) GoString() string { return a.String() }

// LogValue logs the account without its credentials.
func (a AccountSettings) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", a.Name), slog.String("venue", a.Venue), slog.Bool("testnet", a.Testnet))
}

// maxAccountName bounds an account's name as the signal bounds exchange.
const maxAccountName = 32

// ParseAccounts reads a JSON list of accounts (HOOX_ACCOUNTS' format).
// Unknown members are refused, so a misspelt "api_secet" is not an
// account without a secret. Its errors never quote the text, which holds
// secrets: a syntax error gives the byte offset, a wrong type the member.
func ParseAccounts(data []byte) ([]AccountSettings, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var out []AccountSettings
	if err := dec.Decode(&out); err != nil {
		var (
			syn *json.SyntaxError
			typ *json.UnmarshalTypeError
		)
		switch {
		case errors.As(err, &syn):
			return nil, fmt.Errorf("not valid JSON (at byte %d)", syn.Offset)
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
			return nil, errors.New("not valid JSON (it ends early)")
		case errors.As(err, &typ) && typ.Field != "":
			return nil, fmt.Errorf("member %q must be a JSON %s", typ.Field, jsonKind(typ.Type.Kind().String()))
		case errors.As(err, &typ):
			return nil, errors.New(`must be a JSON list of accounts: [{"name": …, "venue": …, "api_key": …, "api_secret": …}]`)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			// The field's name, never its value.
			return nil, fmt.Errorf("unknown member %s (known: name, venue, api_key, api_secret, api_passphrase, base_url, testnet)",
				strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return nil, errors.New("not a JSON list of accounts")
	}
	if dec.More() {
		return nil, errors.New("holds more than one JSON value")
	}
	return out, nil
}

func jsonKind(goKind string) string {
	if goKind == "bool" {
		return "boolean (true or false)"
	}
	return goKind
}

// checkAccounts refuses a named account that would be ambiguous, unusable
// or half configured; each line names the account, never a credential.
func (c *Config) checkAccounts() []string {
	from := c.AccountsFrom
	if from == "" {
		from = "HOOX_ACCOUNTS"
	}
	var refused []string
	refuse := func(i int, a AccountSettings, format string, args ...any) {
		who := fmt.Sprintf("account %d", i+1)
		if a.Name != "" {
			who = fmt.Sprintf("account %q", a.Name)
		}
		refused = append(refused, fmt.Sprintf("%s: %s: %s", from, who, fmt.Sprintf(format, args...)))
	}
	kinds := append(venues.Names(), exchange.PaperName)
	seen := map[string]bool{}
	for i, a := range c.Accounts {
		if !validAccountName(a.Name) {
			refuse(i, a, "name must be 1–%d of a-z, 0-9, _ and - (lower case)", maxAccountName)
		} else if seen[a.Name] {
			refuse(i, a, "is named twice; names must be unique")
		}
		seen[a.Name] = true
		k, real := venues.Lookup(a.Venue)
		switch {
		case !real && a.Venue != exchange.PaperName:
			refuse(i, a, "venue %q is not one of %s", a.Venue, strings.Join(kinds, ", "))
			continue
		case a.Name == exchange.PaperName:
			refuse(i, a, "paper is the built-in paper venue; give the account another name")
			continue
		case !real:
			if a.APIKey != "" || a.APISecret != "" || a.APIPassphrase != "" || a.BaseURL != "" || a.Testnet {
				refuse(i, a, "a paper account takes no keys, base_url or testnet")
			}
			continue
		}
		for _, other := range kinds {
			switch {
			case a.Name != other:
			case other != a.Venue:
				refuse(i, a, "the name is venue %s's; an account on %s may not take it", other, a.Venue)
			case c.Venue(other) != nil && c.Venue(other).APIKey != "":
				refuse(i, a, "is %s's default account, which HOOX_%s_API_KEY configures already: configure it once", other, k.Env)
			}
		}
		switch {
		case a.APIKey == "" || a.APISecret == "":
			refuse(i, a, "api_key and api_secret are both required")
		case k.Passphrase && a.APIPassphrase == "":
			refuse(i, a, "api_passphrase is required: %s keys come with a passphrase", k.Name)
		case !k.Passphrase && a.APIPassphrase != "":
			refuse(i, a, "api_passphrase is set, but %s keys have none", k.Name)
		}
	}
	return refused
}

func validAccountName(s string) bool {
	if s == "" || len(s) > maxAccountName {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// accountEntries builds the registry entries of the named accounts; paper
// accounts get their own paper venue on pool (the paper book is keyed by
// client order ID, which differs per account).
func (c *Config) accountEntries(log *slog.Logger, pool *pgxpool.Pool) ([]exchange.Entry, error) {
	var out []exchange.Entry
	for _, a := range c.Accounts {
		alog := log.With("exchange", a.Name, "venue", a.Venue)
		if a.Venue == exchange.PaperName {
			out = append(out, exchange.Entry{Name: a.Name, Venue: a.Venue, Live: paper.New(paper.Config{Pool: pool})})
			alog.Info("account configured")
			continue
		}
		k, _ := venues.Lookup(a.Venue)
		live, err := k.New(venues.Settings{APIKey: a.APIKey, APISecret: a.APISecret, Passphrase: a.APIPassphrase,
			BaseURL: a.BaseURL, Testnet: a.Testnet, Now: c.clock(), Logger: alog})
		if err != nil {
			return nil, fmt.Errorf("account %q: %w", a.Name, err)
		}
		e := exchange.Entry{Name: a.Name, Venue: a.Venue, Live: live, Testnet: a.Testnet, BaseURL: a.BaseURL}
		if e.BaseURL == "" {
			e.BaseURL = "(production)"
			if a.Testnet {
				e.BaseURL = k.TestnetURL
			}
		}
		alog.Info("account configured", "testnet", a.Testnet, "api_key", "set")
		out = append(out, e)
	}
	return out, nil
}
