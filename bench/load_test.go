package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// The latency of an open-loop request counts from when vegeta's pacer meant
// to send it. The pacer, asked at the start of the run, makes request n wait
// until (n+1)·interval: counting from n·interval would charge every request
// one interval it never waited.
func TestScheduledMatchesVegetasConstantPacer(t *testing.T) {
	for _, rate := range []int{20, 1000} {
		pacer := vegeta.ConstantPacer{Freq: rate, Per: time.Second}
		interval := time.Second / time.Duration(rate)
		began := time.Unix(1_700_000_000, 0)
		for _, seq := range []uint64{0, 1, 7, uint64(rate) - 1} {
			// The pacer's answer at the run's start: how long request seq
			// waits when it is next.
			wait, stop := pacer.Pace(0, seq)
			require.False(t, stop)
			require.Equal(t, began.Add(wait), scheduled(began, seq, interval), "rate %d/s, request %d", rate, seq)
		}
	}
}
