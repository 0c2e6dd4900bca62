package signal

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of objects and arrays Decode accepts. Known
// fields are all scalars, but unknown fields may hold objects and arrays;
// they are ignored, and the limit keeps a hostile body from costing more
// than its size.
const MaxDepth = 32

// utf8BOM is stripped from the front of a body before parsing: several
// TradingView-adjacent tools (and Windows editors whose output gets pasted
// into alert messages) emit one, and rejecting it would drop real signals
// over an invisible byte.
const utf8BOM = "\xEF\xBB\xBF"

// valueKind is the JSON type of a top-level value.
type valueKind int

const (
	kindNull valueKind = iota
	kindBool
	kindNumber
	kindString
	kindObject
	kindArray
)

// value is one top-level member of a known field, kept as text so numbers
// never pass through float64.
type value struct {
	kind valueKind
	// text is the unescaped string, the number token exactly as sent,
	// "true"/"false", or for an object or array the JSON text of it as
	// sent (attachments such as {"percent": 2} are read from it).
	text string
	// line, col and offset locate the value in the body for error messages.
	line, col, offset int
	// items are the elements of an array (kindArray), each a scalar or,
	// for a nested array or object, only its kind: the one list field
	// (accounts) takes strings.
	items []value
}

// Raw is a syntactically valid signal body whose fields have not been
// validated yet. It exists so the handler can check the secret before it
// reveals, through field errors, anything about what a valid signal looks
// like.
type Raw struct {
	// fields holds only the known top-level names (canonical and aliases);
	// unknown fields are dropped during decoding.
	fields map[string]value
	// otherCase is, by field, the keys of fields that spell one of the
	// field's keys in another letter case ("Price"), sorted; nil when
	// there are none, as nearly always (noteOtherCase).
	otherCase map[string][]string
}

// noteOtherCase fills otherCase once the body is decoded: keysOf then
// reads it instead of scanning every key for each field it is asked.
func (r *Raw) noteOtherCase() {
	for k := range r.fields {
		if knownKeys[k] {
			continue
		}
		field := foldedKeys[foldKey(k)]
		if r.otherCase == nil {
			r.otherCase = map[string][]string{}
		}
		r.otherCase[field] = append(r.otherCase[field], k)
	}
	for _, keys := range r.otherCase {
		slices.Sort(keys)
	}
}

// String redacts the body so a Raw printed with %v or %+v never shows the
// secret.
func (r *Raw) String() string { return "signal.Raw{redacted}" }

// GoString redacts the body for %#v for the same reason as String.
func (r *Raw) GoString() string { return r.String() }

// frame is one open object or array while decoding.
type frame struct {
	object  bool
	wantKey bool
	keys    map[string]struct{}
}

// Decode parses body as exactly one JSON object and checks syntax only.
//
// It rejects what a trading system must not guess about: an empty body, a
// top-level value that is not an object, data after the object, duplicate
// keys in any object (RFC 7493 I-JSON: which value would win is
// implementation-defined), nesting deeper than MaxDepth and invalid UTF-8
// (which encoding/json would otherwise replace silently). A leading UTF-8
// byte order mark is stripped and accepted. Errors are *Error with an empty
// Field and the line, column and byte offset of the problem.
func Decode(body []byte) (*Raw, error) {
	bomLen := 0
	if bytes.HasPrefix(body, []byte(utf8BOM)) {
		body = body[len(utf8BOM):]
		bomLen = len(utf8BOM)
	}
	if off := invalidUTF8(body); off >= 0 {
		return nil, syntaxError(body, off, bomLen, "invalid UTF-8")
	}
	if len(bytes.TrimLeft(body, " \t\r\n")) == 0 {
		return nil, syntaxError(body, len(body), bomLen, "body is empty; expected a JSON object")
	}
	raw, ok := decodeFast(body, bomLen)
	if !ok {
		var err error
		if raw, err = decodeTokens(body, bomLen); err != nil {
			return nil, err
		}
	}
	raw.noteOtherCase()
	return raw, nil
}

// decodeTokens is Decode read token by token with encoding/json: the path
// for any body decodeFast does not accept, which finds its error.
func decodeTokens(body []byte, bomLen int) (*Raw, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	raw := &Raw{fields: make(map[string]value)}
	var stack []*frame
	topKey := ""
	// nestedStart is where the value of the current top-level known field
	// began, when that value is an object or array: its text is kept once
	// it closes.
	nestedStart := -1
	closeNested := func() {
		if len(stack) == 1 && nestedStart >= 0 {
			v := raw.fields[topKey]
			v.text = string(body[nestedStart:dec.InputOffset()])
			raw.fields[topKey] = v
			nestedStart = -1
		}
	}
	for {
		start := tokenStart(body, int(dec.InputOffset()))
		tok, err := dec.Token()
		if err != nil {
			return nil, tokenError(body, err, start, bomLen)
		}
		if len(stack) == 0 {
			if d, ok := tok.(json.Delim); !ok || d != '{' {
				return nil, syntaxError(body, start, bomLen, "top-level value must be a JSON object")
			}
			stack = append(stack, &frame{object: true, wantKey: true, keys: make(map[string]struct{})})
			continue
		}
		top := stack[len(stack)-1]

		if top.object && top.wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					break
				}
				closeNested()
				if parent := stack[len(stack)-1]; parent.object {
					parent.wantKey = true
				}
				continue
			}
			key, ok := tok.(string)
			if !ok {
				// Unreachable with encoding/json, kept so a decoder change
				// cannot turn into a panic.
				return nil, syntaxError(body, start, bomLen, "expected an object key")
			}
			if _, dup := top.keys[key]; dup {
				return nil, syntaxError(body, start, bomLen, "duplicate key "+strconv.Quote(key))
			}
			top.keys[key] = struct{}{}
			top.wantKey = false
			if len(stack) == 1 {
				topKey = key
			}
			continue
		}

		// tok is a value, or the end of an array.
		known := len(stack) == 1 && isKnownField(topKey)
		// item: an element of a known field's array.
		item := len(stack) == 2 && !top.object && isKnownField(topKey)
		if d, ok := tok.(json.Delim); ok && d == ']' {
			item = false
		}
		v := value{}
		if known || item {
			v.line, v.col, v.offset = position(body, start, bomLen)
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if len(stack) >= MaxDepth {
					return nil, syntaxError(body, start, bomLen, "nesting deeper than "+strconv.Itoa(MaxDepth)+" levels")
				}
				if known || item {
					v.kind = kindArray
					if t == '{' {
						v.kind = kindObject
					}
				}
				if known {
					raw.fields[topKey] = v
					nestedStart = start
				}
				if item {
					list := raw.fields[topKey]
					list.items = append(list.items, v)
					raw.fields[topKey] = list
				}
				f := &frame{object: t == '{', wantKey: t == '{'}
				if f.object {
					f.keys = make(map[string]struct{})
				}
				stack = append(stack, f)
				continue
			default:
				// ']': the root is always an object, so the stack cannot
				// empty here, and a stray '}' is rejected by the decoder.
				stack = stack[:len(stack)-1]
				closeNested()
			}
		case string:
			v.kind, v.text = kindString, t
		case json.Number:
			v.kind, v.text = kindNumber, string(t)
		case bool:
			v.kind, v.text = kindBool, strconv.FormatBool(t)
		case nil:
			v.kind = kindNull
		}
		if _, isDelim := tok.(json.Delim); !isDelim && known {
			raw.fields[topKey] = v
		}
		if _, isDelim := tok.(json.Delim); !isDelim && item {
			list := raw.fields[topKey]
			list.items = append(list.items, v)
			raw.fields[topKey] = list
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].wantKey = true
		}
	}

	end := int(dec.InputOffset())
	if rest := skipSpace(body, end); rest < len(body) {
		return nil, syntaxError(body, rest, bomLen, "unexpected data after the JSON object")
	}
	return raw, nil
}

// tokenError converts an encoding/json error into a positioned *Error.
func tokenError(body []byte, err error, start, bomLen int) *Error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return syntaxError(body, int(se.Offset), bomLen, se.Error())
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return syntaxError(body, len(body), bomLen, "unexpected end of JSON input")
	default:
		return syntaxError(body, start, bomLen, err.Error())
	}
}

// skipSpace returns the offset of the first non-whitespace byte at or after
// off (JSON whitespace only).
func skipSpace(body []byte, off int) int {
	for off < len(body) {
		switch body[off] {
		case ' ', '\t', '\r', '\n':
			off++
		default:
			return off
		}
	}
	return off
}

// tokenStart returns where the next token begins: InputOffset points just
// past the previous token, before any separator the decoder has yet to
// consume.
func tokenStart(body []byte, off int) int {
	for off < len(body) {
		switch body[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

// invalidUTF8 returns the offset of the first invalid UTF-8 byte, or -1.
func invalidUTF8(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return -1
}
