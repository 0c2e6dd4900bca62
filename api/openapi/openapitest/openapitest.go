// Package openapitest holds hoox's HTTP traffic in tests to its OpenAPI
// document (api/openapi): every answer to a documented route must match the
// document (status, headers, media type, body), and so must every request
// hoox accepted (status below 400; a refused request may be malformed on
// purpose). The api tests wrap their handler with [Handler]; the tests that
// talk to a running hoox over HTTP (internal/apptest) call [Check] on each
// exchange, so the whole suite's traffic keeps the document honest.
package openapitest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/hoox/hoox/api/openapi"
)

// load parses and validates the embedded document once per test binary;
// every check shares the read-only result.
var load = sync.OnceValues(func() (routers.Router, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapi.Document())
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	return legacy.NewRouter(doc)
})

// Load parses and validates the embedded document (once per test binary);
// an error says why the document itself is broken.
func Load() error {
	_, err := load()
	return err
}

// Handler wraps h so that every exchange it serves is checked with [Check];
// a mismatch fails t, the test that made the request.
func Handler(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	if _, err := load(); err != nil {
		t.Fatalf("openapi document: %v", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var reqBody []byte
		if r.Body != nil {
			reqBody, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(reqBody))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		Check(t, r, reqBody, rec.Code, rec.Header(), rec.Body.Bytes())
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// Check holds one exchange to the document: r with its body reqBody, and
// the answer's status, header and body. Routes outside the document (/ui/,
// /metrics, River's UI) pass unchecked. A mismatch fails t.
func Check(t testing.TB, r *http.Request, reqBody []byte, status int, header http.Header, body []byte) {
	t.Helper()
	router, err := load()
	if err != nil {
		t.Fatalf("openapi document: %v", err)
	}
	route, params, err := router.FindRoute(r)
	// A 405 answers a method no operation of its path takes; the document
	// describes operations, and its router may still match the request to
	// a longer path (GET /admin/purge to /admin/purge/{job_id}).
	if err != nil || status == http.StatusMethodNotAllowed {
		return
	}
	check := r.Clone(context.Background())
	// The document says a leading UTF-8 byte order mark is ignored (RFC 8259
	// lets a parser do so); the validator's JSON decoder does not, so it is
	// given the body without it.
	check.Body = io.NopCloser(bytes.NewReader(bytes.TrimPrefix(reqBody, []byte("\xef\xbb\xbf"))))
	in := &openapi3filter.RequestValidationInput{Request: check, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
	what := r.Method + " " + r.URL.RequestURI()
	if status < 400 {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			t.Errorf("openapi: %s was accepted (%d) but the request does not match the document: %s", what, status, describe(err))
		}
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	out.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("openapi: the response %d to %s does not match the document: %s\nbody: %s", status, what, describe(err), body)
	}
}

// describe flattens a validation error into one line per cause.
func describe(err error) string {
	var me openapi3.MultiError
	if errors.As(err, &me) {
		var parts []string
		for _, e := range me {
			parts = append(parts, e.Error())
		}
		return strings.Join(parts, "; ")
	}
	return err.Error()
}
