package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/signal"
)

// decodeAdminBody reads a small JSON body into v, refusing unknown fields so
// a misspelt field is not silently ignored. An empty body is allowed unless
// required.
//
// It is as strict as the webhook's decoder about what would otherwise be
// guessed: invalid UTF-8 (encoding/json would store U+FFFD in its place),
// a key given twice in one object, compared as encoding/json matches
// fields, that is case-insensitively (which value wins is
// implementation-defined, and {"engaged":true,"Engaged":false} must not
// release the kill switch), and anything after the object. A body in a
// content coding is refused as the webhook refuses it
// (checkContentEncoding): read as plain JSON, a body labelled gzip had its
// change made.
func decodeAdminBody(c echo.Context, v any, required bool) error {
	if err := checkContentEncoding(c); err != nil {
		return err
	}
	body, err := readBody(c, maxAdminBody)
	if err != nil {
		return err
	}
	if len(body) > maxAdminBody {
		return problem(codes.TooLarge, fmt.Sprintf("body exceeds %d bytes", maxAdminBody))
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if required {
			return problem(codes.InvalidRequest, "a JSON body is required")
		}
		return nil
	}
	if !utf8.Valid(body) {
		return problem(codes.InvalidRequest, "body is not valid UTF-8")
	}
	if key, dup := duplicateKey(body); dup {
		return problem(codes.InvalidRequest, fmt.Sprintf("body gives the key %s twice (keys are matched regardless of case)",
			strconv.Quote(key)))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return problem(codes.InvalidRequest, "body is not valid JSON for this route: "+err.Error())
	}
	// Decoder.More is false before a stray ']' or '}', so only the end of
	// the input proves nothing follows the object.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return problem(codes.InvalidRequest, "body holds data after the JSON object")
	}
	return nil
}

// duplicateKey reports the first key that appears twice in one object of
// body, comparing keys as encoding/json matches them to struct fields
// (bytes.EqualFold after unescaping). Syntax errors end the walk without a
// finding: the decoder that follows reports them.
func duplicateKey(body []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	// objects holds, per open object, the folded keys seen so far; an
	// array's entry is nil. wantKey says the next token in the innermost
	// object is a key.
	var objects []map[string]bool
	wantKey := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		n := len(objects)
		if wantKey {
			if key, ok := tok.(string); ok {
				folded := foldKey(key)
				if objects[n-1][folded] {
					return key, true
				}
				objects[n-1][folded] = true
				wantKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			objects = append(objects, map[string]bool{})
			wantKey = true
			continue
		case json.Delim('['):
			objects = append(objects, nil)
			wantKey = false
			continue
		case json.Delim('}'), json.Delim(']'):
			objects = objects[:n-1]
		}
		if len(objects) == 0 {
			return "", false
		}
		// A value ended: in an object, a key comes next.
		wantKey = objects[len(objects)-1] != nil
	}
}

// foldKey maps each character of s to the smallest of its case-folding
// equivalents, as encoding/json does, so foldKey(a) == foldKey(b) exactly
// when bytes.EqualFold(a, b): "Engaged", "ENGAGED" and "engaged" are one
// key, and so are "reason" and "reaſon" (U+017F folds to s).
func foldKey(s string) string {
	var b []rune
	for _, r := range s {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b = append(b, least)
	}
	return string(b)
}

// storable reports whether s is text Postgres can store and an operator can
// read back unaltered: valid UTF-8 without control characters (a NUL is
// refused by Postgres text; a newline or an escape sequence would forge log
// lines or rewrite a terminal). Identifiers and filters in the admin API
// (trace IDs, listing filters, cursors) pass it or are refused as the
// client's mistake, before any query runs.
func storable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// checkQuery refuses a query parameter the route does not read (names
// are the ones it does) and one given twice, so a misspelt or misplaced
// option — ?force=yes, ?dry_run=true on a purge, ?reason=… on a release —
// is a 400 that changes nothing rather than an action done without it.
func checkQuery(c echo.Context, names ...string) error {
	for name, vals := range c.QueryParams() {
		if !slices.Contains(names, name) {
			if len(names) == 0 {
				return invalidParam(name, "is not read by this route, which takes no query parameters")
			}
			return invalidParam(name, "is not read by this route; it takes "+strings.Join(names, ", "))
		}
		if len(vals) != 1 {
			return invalidParam(name, "must be given once")
		}
	}
	return nil
}

// checkText applies the signal's rule for audit text (signal.CheckText) to
// a body's text field, so an operator's reason or a ledger's strategy is
// held to what a signal's strategy is.
func checkText(field, s string) error {
	if msg := signal.CheckText(s); msg != "" {
		return problem(codes.InvalidRequest, field+" "+msg)
	}
	return nil
}
