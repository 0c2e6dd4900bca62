package api_test

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

// loadContract parses and validates the embedded OpenAPI document once per
// test binary; every contract handler shares the read-only result.
var loadContract = sync.OnceValues(func() (routers.Router, error) {
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

// contract wraps h so that every response it gives to a route the OpenAPI
// document describes is checked against the document (status, headers,
// media type, body), and so is every request it accepts (status < 400). A
// request hoox refuses may be malformed on purpose, so only its answer is
// held to the document. A mismatch fails t, the test that made the
// request. Routes outside the document (/ui/, /metrics, River's UI) pass
// through unchecked.
func contract(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	router, err := loadContract()
	if err != nil {
		t.Fatalf("openapi document: %v", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route, params, err := router.FindRoute(r)
		if err != nil {
			h.ServeHTTP(w, r)
			return
		}
		var reqBody []byte
		if r.Body != nil {
			reqBody, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(reqBody))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)

		check := r.Clone(context.Background())
		// The document says a leading UTF-8 byte order mark is ignored
		// (RFC 8259 lets a parser do so); the validator's JSON decoder
		// does not, so it is given the body without it.
		check.Body = io.NopCloser(bytes.NewReader(bytes.TrimPrefix(reqBody, []byte("\xef\xbb\xbf"))))
		in := &openapi3filter.RequestValidationInput{Request: check, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
		what := r.Method + " " + r.URL.RequestURI()
		if rec.Code < 400 {
			if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
				t.Errorf("openapi: %s was accepted (%d) but the request does not match the document: %s", what, rec.Code, describe(err))
			}
		}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: rec.Code, Header: rec.Header(),
			Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
		out.SetBodyBytes(rec.Body.Bytes())
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			t.Errorf("openapi: the response %d to %s does not match the document: %s\nbody: %s", rec.Code, what, describe(err), rec.Body.String())
		}

		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
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
