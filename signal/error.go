package signal

import (
	"fmt"
	"unicode/utf8"
)

// Error is the one error type the package returns for a bad request body, so
// the HTTP layer can map it to 400 invalid_signal with errors.As and tell the
// sender what to fix.
//
// A syntax error from Decode has an empty Field and a position. A validation
// error from Raw.Signal or DeriveTrace names the canonical field (or the
// "Idempotency-Key" header) and, when the field came from the body, the
// position of its value.
type Error struct {
	// Field is the canonical field name ("quantity"), "Idempotency-Key" for
	// the header, or "" for a JSON syntax error.
	Field string
	// Msg states the rule that was broken. It never repeats a value, so a
	// secret pasted into the wrong field cannot leak into logs or responses.
	Msg string
	// Line and Column are 1-based; Column counts characters (runes), not
	// bytes, because that is what an editor shows. Zero when unknown.
	Line, Column int
	// Offset is the 0-based byte offset into the body as it was received
	// (a stripped byte order mark included).
	Offset int
}

// Error formats the error for a problem+json detail or a log line.
func (e *Error) Error() string {
	if e.Field != "" {
		return e.Field + ": " + e.Msg
	}
	if e.Line > 0 {
		return fmt.Sprintf("invalid JSON at line %d, column %d: %s (byte offset %d)", e.Line, e.Column, e.Msg, e.Offset)
	}
	return "invalid JSON: " + e.Msg
}

// position turns a byte offset into the decoded (BOM-stripped) body into a
// line and column; bomLen is added to the reported offset so it matches the
// bytes the sender actually sent.
func position(body []byte, off, bomLen int) (line, col, offset int) {
	if off < 0 {
		off = 0
	}
	if off > len(body) {
		off = len(body)
	}
	line = 1
	lineStart := 0
	for i := 0; i < off; i++ {
		if body[i] == '\n' {
			line++
			lineStart = i + 1
		}
	}
	col = utf8.RuneCount(body[lineStart:off]) + 1
	return line, col, off + bomLen
}

// syntaxError builds a Decode error at a byte offset.
func syntaxError(body []byte, off, bomLen int, msg string) *Error {
	line, col, offset := position(body, off, bomLen)
	return &Error{Msg: msg, Line: line, Column: col, Offset: offset}
}
