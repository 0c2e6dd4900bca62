package signal

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A cancel reads no exits nor position: a reused entry template's
// take_profit, stop_loss, trailing_stop and market_position — rendered, unrendered or malformed — are not
// a reason to refuse it (the resting entry it was sent to cancel would stay
// open), and the cancel is the same cancel with or without them.
func TestCancelIsNotRefusedForFieldsItIgnores(t *testing.T) {
	t.Parallel()
	const cancel = `"exchange":"paper","symbol":"BTCUSDT","action":"cancel","trace_id":"c-1"`
	plain := mustSignal(t, `{`+cancel+`}`)
	for _, exits := range []string{
		`"take_profit":"{{plot_0}}","stop_loss":"2%"`,
		`"stop_loss":{"percnt":2}`,
		`"trailing_stop":"1%"`,
		`"take_profit":"71000","stop_loss":"72000"`,
		`"market_position":"{{strategy.market_position}}"`,
	} {
		raw, err := Decode([]byte(`{` + cancel + `,` + exits + `}`))
		require.NoError(t, err)
		s, err := raw.Signal()
		require.NoError(t, err, "a cancel with %s", exits)
		require.Equal(t, ActionCancel, s.Action)
		require.False(t, s.HasAttachments(), "a cancel carries no exit on to the venue")
		require.Equal(t, string(plain.Canonical()), string(s.Canonical()))
	}
}
