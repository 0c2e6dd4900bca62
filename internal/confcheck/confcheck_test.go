package confcheck_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/confcheck"
)

func TestCheckerJoinsEveryRefusalAndAllFindsThemWrapped(t *testing.T) {
	t.Parallel()
	ck := confcheck.New("gateway")
	ck.Duration("LockWait", 0, time.Millisecond, 2500*time.Millisecond, "; 0 waits forever")
	ck.Duration("TraceTTL", time.Hour, time.Millisecond, 0, "")
	ck.Duration("DedupWindow", -time.Second, time.Millisecond, 0, "")
	ck.Refuse("Secret", "", "is required")
	err := fmt.Errorf("start: %w", ck.Err())

	all := confcheck.All(err)
	require.Len(t, all, 3)
	require.Equal(t, "gateway.LockWait=0s: must be between 1ms and 2.5s; 0 waits forever", all[0].Error())
	require.Equal(t, "gateway.DedupWindow=-1s: must be at least 1ms", all[1].Error())
	require.Equal(t, "gateway.Secret: is required", all[2].Error(), "a value left empty is never printed")
	require.NoError(t, confcheck.New("x").Err())
	require.Empty(t, confcheck.All(nil))
}
