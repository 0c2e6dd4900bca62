package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/hoox/hoox/exchange/venues"
	"github.com/hoox/hoox/internal/app"
)

// venueOptions are the settings of every venue in the registry,
// HOOX_<VENUE>_*: six for each, eight for a venue whose keys have a
// passphrase.
func venueOptions(c *Config) []option {
	all := venues.All()
	for len(c.Venues) < len(all) {
		c.Venues = append(c.Venues, app.VenueSettings{})
	}
	var out []option
	for i, k := range all {
		v := &c.Venues[i]
		flag := strings.ToLower(strings.ReplaceAll(k.Env, "_", "-"))
		env := "HOOX_" + k.Env
		out = append(out,
			option{flag + "-api-key", env + "_API_KEY", k.Name + " API key (live, or testnet with " + env + "_TESTNET)", secretValue{&v.APIKey}, ""},
			option{flag + "-api-secret", env + "_API_SECRET", k.Name + " API secret", secretValue{&v.APISecret}, ""})
		if k.Passphrase {
			out = append(out, option{flag + "-api-passphrase", env + "_API_PASSPHRASE", k.Name + " API key passphrase (required with the key)", secretValue{&v.APIPassphrase}, ""})
		}
		out = append(out,
			option{flag + "-base-url", env + "_BASE_URL", k.Name + " base URL (default: the venue's production URL)", stringValue{&v.BaseURL}, ""},
			option{flag + "-testnet", env + "_TESTNET", "send " + k.Name + "'s live signals to its testnet", boolValue{&v.Testnet}, ""},
			option{flag + "-testnet-api-key", env + "_TESTNET_API_KEY", k.Name + " testnet API key: test signals go there (else to paper)", secretValue{&v.TestnetAPIKey}, ""},
			option{flag + "-testnet-api-secret", env + "_TESTNET_API_SECRET", k.Name + " testnet API secret", secretValue{&v.TestnetAPISecret}, ""},
		)
		if k.Passphrase {
			out = append(out, option{flag + "-testnet-api-passphrase", env + "_TESTNET_API_PASSPHRASE", k.Name + " testnet API key passphrase", secretValue{&v.TestnetAPIPassphrase}, ""})
		}
	}
	return out
}

// accountOptions are the named accounts: a JSON list in HOOX_ACCOUNTS, or
// the same JSON in the file HOOX_ACCOUNTS_FILE names (not both).
func accountOptions(c *Config) []option {
	return []option{
		{"accounts", "HOOX_ACCOUNTS", `named accounts, a JSON list: [{"name":"main","venue":"binance","api_key":"…","api_secret":"…"}] (also api_passphrase, base_url, testnet)`,
			accountsValue{c: c, from: "HOOX_ACCOUNTS"}, ""},
		{"accounts-file", "HOOX_ACCOUNTS_FILE", "a file holding HOOX_ACCOUNTS' JSON (instead of HOOX_ACCOUNTS)",
			accountsValue{c: c, from: "HOOX_ACCOUNTS_FILE", file: true}, ""},
	}
}

// accountsValue parses the accounts' JSON, given inline or as a file. It
// never prints its value: the JSON holds keys and secrets.
type accountsValue struct {
	c    *Config
	from string
	file bool
}

func (v accountsValue) String() string {
	if v.file && v.c != nil && v.c.AccountsFrom == v.from {
		return v.c.AccountsPath
	}
	return ""
}

func (v accountsValue) Set(s string) error {
	if v.c.AccountsFrom != "" && v.c.AccountsFrom != v.from {
		return fmt.Errorf("%s is set too: give the accounts in one of HOOX_ACCOUNTS and HOOX_ACCOUNTS_FILE", v.c.AccountsFrom)
	}
	data := []byte(s)
	if v.file {
		var err error
		if data, err = os.ReadFile(s); err != nil {
			return fmt.Errorf("read the accounts file: %w", err)
		}
		v.c.AccountsPath = s
	}
	accounts, err := app.ParseAccounts(data)
	if err != nil {
		return err
	}
	v.c.Accounts, v.c.AccountsFrom = accounts, v.from
	return nil
}
