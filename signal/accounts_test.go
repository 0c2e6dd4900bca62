package signal

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAccountsAreReadAsOneNameOrAList(t *testing.T) {
	t.Parallel()
	s := mustSignal(t, `{"account":"Main","symbol":"BTCUSDT","action":"buy","quantity":1}`)
	require.Equal(t, []string{"main"}, s.Accounts)
	require.False(t, s.FanOut)
	require.Empty(t, s.Exchange, "an account alone names no exchange")

	s = mustSignal(t, `{"exchange":"binance","accounts":["main","SUB_1"],"symbol":"BTCUSDT","action":"buy","quantity":1}`)
	require.Equal(t, []string{"main", "sub_1"}, s.Accounts)
	require.True(t, s.FanOut)
	require.Equal(t, "binance", s.Exchange)

	s = mustSignal(t, `{"exchange":"binance","symbol":"BTCUSDT","action":"buy","quantity":1}`)
	require.Nil(t, s.Accounts, "neither: the exchange's default account")
}

func TestAccountsRefusals(t *testing.T) {
	t.Parallel()
	const rest = `"symbol":"BTCUSDT","action":"buy","quantity":1`
	eleven := strings.Repeat(`"a",`, 10) + `"b"`
	tests := []struct {
		name, body, field, msg string
	}{
		{"neither exchange nor account", `{` + rest + `}`, FieldExchange, "is required (or name the account or accounts)"},
		{"both account and accounts", `{"account":"a","accounts":["b"],` + rest + `}`, FieldAccounts, "send account or accounts, not both"},
		{"an empty list", `{"accounts":[],` + rest + `}`, FieldAccounts, "must name 1–10 accounts"},
		{"more than ten", `{"accounts":[` + eleven + `],` + rest + `}`, FieldAccounts, "must name 1–10 accounts"},
		{"a name twice", `{"accounts":["a","B","b"],` + rest + `}`, FieldAccounts, `names "b" twice`},
		{"a name that is not a string", `{"accounts":["a",7],` + rest + `}`, FieldAccounts, "each account must be a string"},
		{"a nested list", `{"accounts":[["a"]],` + rest + `}`, FieldAccounts, "each account must be a string"},
		{"a bad charset", `{"accounts":["a b"],` + rest + `}`, FieldAccounts, "each account must be 1–32 of a-z, 0-9, _ and -"},
		{"a string for the list", `{"accounts":"a",` + rest + `}`, FieldAccounts, "must be a list of account names"},
		{"a list for one account", `{"account":["a"],` + rest + `}`, FieldAccount, "must be a string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			se := signalError(t, tc.body)
			require.Equal(t, tc.field, se.Field)
			require.Equal(t, tc.msg, se.Msg)
		})
	}
}

// The accounts are not part of the fingerprint: each account executes
// ForAccount, whose exchange is the account.
func TestForAccountNamesTheAccountInTheFingerprint(t *testing.T) {
	t.Parallel()
	s := mustSignal(t, `{"accounts":["main","sub1"],"symbol":"BTCUSDT","action":"buy","quantity":1,"timestamp":1714564800000}`)
	main, sub := s.ForAccount("main"), s.ForAccount("sub1")
	require.Equal(t, "main", main.Exchange)
	require.Nil(t, main.Accounts)
	require.NotEqual(t, main.Fingerprint(), sub.Fingerprint())
	viaExchange := mustSignal(t, `{"exchange":"main","symbol":"BTCUSDT","action":"buy","quantity":1,"timestamp":1714564800000}`)
	require.Equal(t, viaExchange.Fingerprint(), main.Fingerprint(), "the account's unit is the same however it was named")
}

func TestDeriveAccountTrace(t *testing.T) {
	t.Parallel()
	now := time.Date(2024, 5, 1, 12, 0, 5, 250e6, time.UTC)
	ms := strconv.FormatInt(now.UnixMilli(), 10)
	const rest = `"symbol":"BTCUSDT","action":"buy","quantity":1`
	derive := func(body, account, venue, header string) Trace {
		t.Helper()
		tr, err := DeriveAccountTrace(mustSignal(t, body), account, venue, header, now)
		require.NoError(t, err)
		return tr
	}
	single := func(body string) Trace {
		t.Helper()
		tr, err := DeriveTrace(mustSignal(t, body), "", now)
		require.NoError(t, err)
		return tr
	}

	t.Run("the default account keeps today's trace", func(t *testing.T) {
		t.Parallel()
		for _, extra := range []string{`"trace_id":"k1"`, `"timestamp":1714564800000`, `"test":true`} {
			today := single(`{"exchange":"binance",` + rest + `,` + extra + `}`)
			require.Equal(t, today, derive(`{"accounts":["binance","sub1"],`+rest+`,`+extra+`}`, "binance", "binance", ""))
		}
	})
	t.Run("client key", func(t *testing.T) {
		t.Parallel()
		tr := derive(`{"accounts":["binance","sub1"],"trace_id":"k1",`+rest+`}`, "sub1", "binance", "")
		require.Equal(t, "@sub1:k:k1", tr.ID)
		require.Equal(t, "@sub1:k:k1", tr.LockKey)
		require.Equal(t, KeyClient, tr.Source)
		require.Equal(t, mustSignal(t, `{"exchange":"sub1",`+rest+`}`).Fingerprint(), tr.Fingerprint)
		require.Equal(t, tr, derive(`{"accounts":["sub1"],`+rest+`}`, "sub1", "binance", "k1"), "the header key gives the same trace")
	})
	t.Run("a key holding @ never meets an account's trace", func(t *testing.T) {
		t.Parallel()
		keyed := derive(`{"exchange":"binance","trace_id":"@sub1:k:k1",`+rest+`}`, "binance", "binance", "")
		acct := derive(`{"accounts":["sub1"],"trace_id":"k1",`+rest+`}`, "sub1", "binance", "")
		require.NotEqual(t, keyed.ID, acct.ID)
		require.NotEqual(t, keyed.LockKey, acct.LockKey)
	})
	t.Run("derived", func(t *testing.T) {
		t.Parallel()
		body := `{"accounts":["binance","sub1"],"timestamp":1714564800000,` + rest + `}`
		base := derive(body, "binance", "binance", "")
		tr := derive(body, "sub1", "binance", "")
		require.Equal(t, "@sub1:"+base.ID, tr.ID, "a fan-out's traces on one venue share the derived part")
		require.Equal(t, tr.ID, tr.LockKey)
		require.NotEqual(t, base.Fingerprint, tr.Fingerprint)
	})
	t.Run("window", func(t *testing.T) {
		t.Parallel()
		body := `{"accounts":["sub1"],"test":true,` + rest + `}`
		tr := derive(body, "sub1", "bybit", "")
		fp := mustSignal(t, `{"exchange":"bybit","test":true,`+rest+`}`).Fingerprint()
		require.Equal(t, "test:@sub1:w:"+fp, tr.LockKey)
		require.Equal(t, "test:@sub1:w:"+fp+":"+ms, tr.ID)
		require.Equal(t, KeyWindow, tr.Source)
		require.Equal(t, ModeTest, tr.Mode)
	})
	t.Run("two accounts never share a lock key or client order ID", func(t *testing.T) {
		t.Parallel()
		for _, extra := range []string{`"trace_id":"k1"`, `"timestamp":1714564800000`, `"comment":"window"`} {
			body := `{"accounts":["binance","sub1","sub2"],` + rest + `,` + extra + `}`
			seen := map[string]bool{}
			for _, a := range []string{"binance", "sub1", "sub2"} {
				tr := derive(body, a, "binance", "")
				id := ClientOrderID("dep", tr.LockKey, 0)
				require.False(t, seen[id], "%s on %s", extra, a)
				seen[id] = true
			}
		}
	})
}

func TestSplitAccountTrace(t *testing.T) {
	t.Parallel()
	for id, want := range map[string][2]string{
		"k:abc":                 {"", "k:abc"},
		"k:@sub1:x":             {"", "k:@sub1:x"},
		"@sub1:k:abc":           {"sub1", "k:abc"},
		"test:@sub1:w:ff:17000": {"sub1", "test:w:ff:17000"},
		"@:k:abc":               {"", "@:k:abc"},
		"@sub1":                 {"", "@sub1"},
	} {
		account, base := SplitAccountTrace(id)
		require.Equal(t, want, [2]string{account, base}, id)
	}
	s := mustSignal(t, `{"accounts":["sub1"],"symbol":"BTCUSDT","action":"buy","quantity":1,"timestamp":1714564800000,"test":true}`)
	tr, err := DeriveAccountTrace(s, "sub1", "okx", "", time.Now())
	require.NoError(t, err)
	base, err := DeriveAccountTrace(s, "okx", "okx", "", time.Now())
	require.NoError(t, err)
	account, got := SplitAccountTrace(tr.ID)
	require.Equal(t, "sub1", account)
	require.Equal(t, base.ID, got)
}
