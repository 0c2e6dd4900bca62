package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
)

// One account of a fan-out placed its order but could not record it
// (gateway.record: "the order was sent but could not be recorded; retry to
// adopt it" — the order IS at the venue). The whole answer's detail must
// not tell the sender that this account "placed nothing": a human reading
// the summary places that account's order again by hand.
func TestFanOutDoesNotSayPlacedNothingForAnAccountWhoseOrderWasSent(t *testing.T) {
	t.Parallel()
	sentNotRecorded := &gateway.Error{Code: codes.Unavailable, RetryAfter: 5 * time.Second,
		Detail: "the order was sent but could not be recorded; retry to adopt it"}
	b := setupFanOut(t, &accountGateway{errs: map[string]error{"by1": sentNotRecorded}})
	r := b.post(t, webhookRequest{body: fanOutSignal})
	require.Equal(t, http.StatusServiceUnavailable, r.Status, string(r.Body))
	detail, _ := r.json(t)["detail"].(string)
	require.False(t, strings.Contains(detail, "placed nothing"),
		"the fan-out's detail is %q, but account by1's order was sent to the venue", detail)
}
