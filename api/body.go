package api

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hoox/hoox/internal/codes"
)

// readBody reads at most limit+1 bytes of a request's body (the caller
// refuses more). A body that cannot be read is answered so the sender
// knows nothing was done and may send it again: 408 request_timeout when
// it did not arrive within the server's read timeout (RFC 9110 §15.5.9),
// 400 when the connection broke. A 400 alone reads as final to a sender,
// which would drop a signal hoox never looked at.
func readBody(c echo.Context, limit int64) ([]byte, error) {
	req := c.Request()
	// Sized from Content-Length when the sender gave one within the
	// limit: io.ReadAll's 512-byte start is most of a small signal's
	// read (issue 21). One byte more, to see the end without growing.
	size := int64(512)
	if req.ContentLength >= 0 && req.ContentLength <= limit {
		size = req.ContentLength + 1
	}
	body, err := readAll(io.LimitReader(req.Body, limit+1), size)
	if err == nil {
		return body, nil
	}
	if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		// The connection's read deadline has passed: it cannot carry the
		// next request.
		c.Response().Header().Set(echo.HeaderConnection, "close")
		return nil, problem(codes.RequestTimeout, "the body did not arrive in time; nothing was done: send the request again")
	}
	return nil, problem(codes.InvalidRequest, "the body could not be read in full (the connection broke); nothing was done: send the request again")
}

// readAll is io.ReadAll starting with room for size bytes.
func readAll(r io.Reader, size int64) ([]byte, error) {
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// checkContentEncoding refuses a body in a content coding: hoox decodes
// none, and reading gzip as JSON would answer a misleading 400 (or, for a
// plain body mislabelled, execute what the sender says it did not send).
// RFC 9110 §15.5.16 makes that a 415 with Accept-Encoding naming what is
// accepted.
func checkContentEncoding(c echo.Context) error {
	for _, v := range c.Request().Header.Values(echo.HeaderContentEncoding) {
		for _, coding := range strings.Split(v, ",") {
			coding = strings.TrimSpace(coding)
			if coding == "" || strings.EqualFold(coding, "identity") {
				continue
			}
			c.Response().Header().Set(echo.HeaderAcceptEncoding, "identity")
			return problem(codes.UnsupportedMedia, fmt.Sprintf("Content-Encoding %s is not accepted; send the body unencoded", coding))
		}
	}
	return nil
}
