package paper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/paper"
)

func TestParseFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    paper.Faults
		wantErr string
	}{
		{in: "", want: paper.Faults{}},
		{in: " , ", want: paper.Faults{}},
		{in: "reject=no balance", want: paper.Faults{Reject: "no balance"}},
		{in: "unreachable", want: paper.Faults{Unreachable: true}},
		{in: "unreachable=false", want: paper.Faults{}},
		{in: "lose_answer", want: paper.Faults{LoseAnswer: true}},
		{in: "delay=3s", want: paper.Faults{Delay: 3 * time.Second}},
		{
			in:   "reject=no balance, unreachable,delay=250ms,LOSE_ANSWER=true",
			want: paper.Faults{Reject: "no balance", Unreachable: true, Delay: 250 * time.Millisecond, LoseAnswer: true},
		},
		{in: "reject", wantErr: "reject needs a reason"},
		{in: "reject=", wantErr: "reject needs a reason"},
		{in: "delay=soon", wantErr: "delay"},
		{in: "delay=-1s", wantErr: "delay"},
		{in: "unreachable=maybe", wantErr: "unreachable"},
		{in: "explode", wantErr: "unknown fault"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := paper.ParseFaults(tt.in)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
