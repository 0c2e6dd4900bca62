package api_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// review-admin, noticed and left: a Content-Encoding hoox does not decode
// was a 400 invalid_signal (the gzip bytes read as bad JSON), and a body
// labelled gzip that was in fact plain JSON was executed. RFC 9110 §15.5.16:
// an unsupported content coding is 415; hoox decodes none, so it says
// Accept-Encoding: identity.
func TestWebhookWithAContentEncodingItDoesNotDecodeIs415(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, err := w.Write([]byte(sig(`"trace_id":"enc-1"`)))
	require.NoError(t, err)
	require.NoError(t, w.Close())

	for _, tc := range []struct{ name, body, encoding string }{
		{"gzip", gz.String(), "gzip"},
		{"plain JSON labelled gzip", sig(`"trace_id":"enc-2"`), "gzip"},
		{"br", sig(`"trace_id":"enc-3"`), "br"},
		{"identity then gzip", sig(`"trace_id":"enc-4"`), "identity, gzip"},
	} {
		r := b.post(t, webhookRequest{body: tc.body, headers: []string{"Content-Encoding", tc.encoding}})
		require.Equal(t, http.StatusUnsupportedMediaType, r.Status, "%s: %s", tc.name, r.Body)
		require.Equal(t, "unsupported_media_type", r.problem(t)["code"], tc.name)
		require.Contains(t, r.problem(t)["detail"], "Content-Encoding", tc.name)
		require.Equal(t, "identity", r.Header.Get("Accept-Encoding"), tc.name)
	}
	require.Empty(t, b.gw.executed(), "nothing refused was executed")

	r := b.post(t, webhookRequest{body: sig(`"trace_id":"enc-5"`), headers: []string{"Content-Encoding", "identity"}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
}

// review-admin, noticed and left: a body that did not arrive within the
// server's read timeout was a 400 "could not read the body", which a
// sender takes as final though nothing was done. It is now 408
// request_timeout saying nothing was done and the signal may be sent
// again. Through a real server, with the body cut short.
func TestWebhookBodyThatDoesNotArriveIs408SayingNothingWasDone(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: b.handler, ReadTimeout: time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	body := sig(`"trace_id":"slow-1"`)
	half := body[:len(body)/2]
	_, err = fmt.Fprintf(conn, "POST /webhook HTTP/1.1\r\nHost: hoox\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), half)
	require.NoError(t, err)
	// The rest never comes; the server's read timeout ends the wait.
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusRequestTimeout, res.StatusCode, string(raw))
	require.Equal(t, "application/problem+json", res.Header.Get("Content-Type"))
	var p map[string]any
	require.NoError(t, json.Unmarshal(raw, &p))
	require.Equal(t, "request_timeout", p["code"])
	require.Contains(t, p["detail"], "nothing was done")
	require.Empty(t, b.gw.executed())
}

// A body cut short by the sender (fewer bytes than its Content-Length) is
// still a 400, and says too that nothing was done.
func TestWebhookBodyCutShortSaysNothingWasDone(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	body := sig(`"trace_id":"cut-1"`)
	req, err := http.NewRequest(http.MethodPost, "/webhook", io.MultiReader(strings.NewReader(body[:10]), errReader{io.ErrUnexpectedEOF}))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.RemoteAddr = "192.0.2.9:1"
	rec := httptest.NewRecorder()
	// Not through the contract checker, which reads the body first.
	b.handler.ServeHTTP(rec, req)
	r := response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	require.Equal(t, "invalid_request", r.problem(t)["code"])
	require.Contains(t, r.problem(t)["detail"], "nothing was done")
	require.Empty(t, b.gw.executed())
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
