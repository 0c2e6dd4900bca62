package paper

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Faults are the failures the paper venue simulates, for tests and fault
// drills. Each mirrors an outcome the gateway must handle for a real venue.
type Faults struct {
	// Reject, when non-empty, refuses every order for good with this reason.
	Reject string
	// Unreachable fails Place and Lookup before anything is sent:
	// exchange.ErrUnreachable, nothing written.
	Unreachable bool
	// Delay makes Place wait this long before it writes, honouring ctx: a
	// ctx done before the write gives exchange.ErrUnreachable and writes
	// nothing, as a request a client gave up on before sending.
	Delay time.Duration
	// LoseAnswer writes the order, then reports exchange.ErrUnknownOutcome,
	// as when a venue's answer times out after it took the order.
	LoseAnswer bool
}

// ParseFaults reads faults from a comma-separated list such as
// "reject=no balance,unreachable,delay=3s,lose_answer", so a whole hoox
// process can be started with faults (HOOX_PAPER_FAULTS) for process-level
// fault tests. Flags accept an optional =true/=false. A reject reason cannot
// contain a comma. The empty string means no faults.
func ParseFaults(s string) (Faults, error) {
	var f Faults
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, value, hasValue := strings.Cut(item, "=")
		key, value = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(value)
		switch key {
		case "reject":
			if value == "" {
				return Faults{}, fmt.Errorf("paper faults: reject needs a reason (reject=<reason>)")
			}
			f.Reject = value
		case "unreachable", "lose_answer":
			on := true
			if hasValue {
				b, err := strconv.ParseBool(value)
				if err != nil {
					return Faults{}, fmt.Errorf("paper faults: %s=%q: want true or false", key, value)
				}
				on = b
			}
			if key == "unreachable" {
				f.Unreachable = on
			} else {
				f.LoseAnswer = on
			}
		case "delay":
			d, err := time.ParseDuration(value)
			if err != nil || d < 0 {
				return Faults{}, fmt.Errorf("paper faults: delay=%q: want a duration such as 3s", value)
			}
			f.Delay = d
		default:
			return Faults{}, fmt.Errorf("paper faults: unknown fault %q (want reject, unreachable, delay, lose_answer)", key)
		}
	}
	return f, nil
}
