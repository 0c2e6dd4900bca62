// Package testutil holds the small helpers many packages' tests share: a
// log sink that goroutines may write while a test reads it, and a clock
// that moves only when a test says so. It has no dependencies inside hoox,
// so any package's tests may import it.
package testutil

import (
	"bytes"
	"log/slog"
	"sync"
	"time"
)

// LogBuffer collects a logger's output. It is safe for concurrent use: the
// servers, River and the adapters log from their own goroutines while the
// test reads.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// JSONLogs is a debug-level logger writing JSON lines into a buffer a test
// can read back, as an operator's log pipeline would.
func JSONLogs() (*slog.Logger, *LogBuffer) {
	buf := &LogBuffer{}
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

// TextLogs is JSONLogs in slog's text format.
func TextLogs() (*slog.Logger, *LogBuffer) {
	buf := &LogBuffer{}
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

// Clock is a clock a test shares between the code under test and a fake
// (an adapter and its venue's fake), so that time moves for both only when
// the test advances it, and a test never sleeps to let time pass.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now reads the clock; pass the method value where a func() time.Time is
// wanted.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
