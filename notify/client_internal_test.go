package notify

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	header := func(v string) http.Header { return http.Header{"Retry-After": []string{v}} }
	tests := []struct {
		name    string
		channel string
		h       http.Header
		body    string
		want    time.Duration
	}{
		{"telegram body wins", ChannelTelegram, header("99"), `{"parameters":{"retry_after":12}}`, 12 * time.Second},
		{"discord float", ChannelDiscord, header("1"), `{"retry_after":0.25}`, 250 * time.Millisecond},
		{"discord header only", ChannelDiscord, header("4"), `{"message":"x"}`, 4 * time.Second},
		{"slack seconds", ChannelSlack, header("30"), `rate_limited`, 30 * time.Second},
		{"http date", ChannelSlack, header(now.Add(90 * time.Second).Format(http.TimeFormat)), ``, 90 * time.Second},
		{"date in the past", ChannelSlack, header(now.Add(-time.Minute).Format(http.TimeFormat)), ``, DefaultRetryAfter},
		{"nothing said", ChannelSlack, http.Header{}, ``, DefaultRetryAfter},
		{"garbage", ChannelSlack, header("soon"), ``, DefaultRetryAfter},
		{"zero", ChannelTelegram, http.Header{}, `{"parameters":{"retry_after":0}}`, DefaultRetryAfter},
		{"absurd", ChannelTelegram, http.Header{}, `{"parameters":{"retry_after":1e12}}`, MaxRetryAfter},
		{"absurd header", ChannelSlack, header("86400"), ``, MaxRetryAfter},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, retryAfter(tt.channel, tt.h, []byte(tt.body), now), tt.name)
	}
}
