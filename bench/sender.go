package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"time"
)

// sender is one keep-alive HTTP/1.1 connection that sends a request and
// reads its answer, and nothing more: the load generator shares the
// machine (and, without --spawn, the process) with the hoox it measures, so
// every microsecond it spends is taken from the run. A general HTTP client
// costs several times what hoox's own HTTP handling does per request
// (issue 21, sixth round); pgbench, the reference's client, is as lean.
type sender struct {
	addr    string
	timeout time.Duration
	conn    net.Conn
	// deadline is the connection's deadline (zero: none yet).
	deadline time.Time
	r        *bufio.Reader
	// body keeps the start of the last answer's body (enough to read a
	// problem's code).
	body []byte
}

// maxKeptBody is how much of an answer's body a sender keeps.
const maxKeptBody = 1024

func newSender(addr string, timeout time.Duration) *sender {
	return &sender{addr: addr, timeout: timeout, body: make([]byte, 0, maxKeptBody)}
}

// hostPort is base's host and port for a sender to dial, and the Host
// header's value.
func hostPort(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" {
		return "", fmt.Errorf("bench sends plain HTTP; %q is not an http:// URL", base)
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "80"), nil
	}
	return u.Host, nil
}

// do sends req (a whole HTTP/1.1 request) and returns the answer's status
// code; s.body holds the start of its body until the next call. Any error
// closes the connection, and the next call dials again.
func (s *sender) do(req []byte) (int, error) {
	code, err := s.exchange(req)
	if err != nil {
		s.close()
	}
	return code, err
}

func (s *sender) exchange(req []byte) (int, error) {
	if s.conn == nil {
		c, err := net.DialTimeout("tcp", s.addr, s.timeout)
		if err != nil {
			return 0, err
		}
		s.conn, s.deadline = c, time.Time{}
		if s.r == nil {
			s.r = bufio.NewReaderSize(c, 4096)
		} else {
			s.r.Reset(c)
		}
	}
	// A request may take between half the timeout and all of it: the
	// deadline is moved on only once half of it is spent. Setting it for
	// every request armed a runtime timer each time, and every timer armed
	// can wake an idle thread of this process (a few per cent of the
	// closed loop's signals, side by side: 1.05 and 1.01×).
	if now := time.Now(); s.deadline.Sub(now) < s.timeout/2 {
		s.deadline = now.Add(s.timeout)
		if err := s.conn.SetDeadline(s.deadline); err != nil {
			return 0, err
		}
	}
	if _, err := s.conn.Write(req); err != nil {
		return 0, err
	}
	return s.readResponse()
}

var errMalformed = errors.New("malformed HTTP response")

// readResponse reads one response: the status line, the headers it needs
// (Content-Length, Transfer-Encoding, Connection) and the body.
func (s *sender) readResponse() (int, error) {
	line, err := s.line()
	if err != nil {
		return 0, err
	}
	// "HTTP/1.1 200 OK"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, errMalformed
	}
	code, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, errMalformed
	}
	length, chunked, closing := -1, false, false
	for {
		h, err := s.line()
		if err != nil {
			return 0, err
		}
		if len(h) == 0 {
			break
		}
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			return 0, errMalformed
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return 0, errMalformed
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			closing = bytes.EqualFold(value, []byte("close"))
		}
	}
	s.body = s.body[:0]
	switch {
	case chunked:
		err = s.readChunked()
	case length >= 0:
		err = s.readBody(length)
	default:
		// Neither: the body runs to the end of the connection.
		err = s.readBody(-1)
		closing = true
	}
	if err != nil {
		return 0, err
	}
	if closing {
		s.close()
	}
	return code, nil
}

// line reads one CRLF-terminated line, without it.
func (s *sender) line() ([]byte, error) {
	l, err := s.r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, errMalformed
		}
		return nil, err
	}
	return bytes.TrimRight(l, "\r\n"), nil
}

// readBody reads n bytes of body (to EOF when n < 0), keeping the first
// maxKeptBody.
func (s *sender) readBody(n int) error {
	for n != 0 {
		chunk, err := s.r.Peek(1)
		if n < 0 && errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil && len(chunk) == 0 {
			return err
		}
		avail := s.r.Buffered()
		if n > 0 {
			avail = min(avail, n)
		}
		b, _ := s.r.Peek(avail)
		if keep := min(len(b), maxKeptBody-len(s.body)); keep > 0 {
			s.body = append(s.body, b[:keep]...)
		}
		_, _ = s.r.Discard(avail)
		if n > 0 {
			n -= avail
		}
	}
	return nil
}

// readChunked reads a chunked body and its (empty) trailer.
func (s *sender) readChunked() error {
	for {
		l, err := s.line()
		if err != nil {
			return err
		}
		size, _, _ := bytes.Cut(l, []byte(";"))
		n, err := strconv.ParseInt(string(bytes.TrimSpace(size)), 16, 32)
		if err != nil || n < 0 {
			return errMalformed
		}
		if n == 0 {
			for {
				t, err := s.line()
				if err != nil {
					return err
				}
				if len(t) == 0 {
					return nil
				}
			}
		}
		if err := s.readBody(int(n)); err != nil {
			return err
		}
		if l, err := s.line(); err != nil || len(l) != 0 {
			return errMalformed
		}
	}
}

func (s *sender) close() {
	if s.conn != nil {
		_ = s.conn.Close()
		s.conn = nil
	}
}

// request builds a whole HTTP/1.1 request for a sender into dst.
func request(dst []byte, method, host, path, contentType string, body []byte) []byte {
	dst = append(dst, method...)
	dst = append(dst, ' ')
	dst = append(dst, path...)
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, host...)
	dst = append(dst, "\r\nUser-Agent: hoox-bench\r\n"...)
	if body != nil {
		dst = append(dst, "Content-Type: "...)
		dst = append(dst, contentType...)
		dst = append(dst, "\r\nContent-Length: "...)
		dst = strconv.AppendInt(dst, int64(len(body)), 10)
		dst = append(dst, "\r\n"...)
	}
	dst = append(dst, "\r\n"...)
	return append(dst, body...)
}
