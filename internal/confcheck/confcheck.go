// Package confcheck is the shape every package's Config.Validate speaks: an
// error naming the Go field it refuses. Packages know their fields, not the
// environment variables an operator types; cmd/hoox maps each field to its
// variable in one table (its options list), so a refusal reads
// "HOOX_LOCK_WAIT=0s: must be between 1ms and 2.5s; …" without any package
// knowing that name.
package confcheck

import (
	"errors"
	"fmt"
	"time"
)

// Error is one setting a Config refuses.
type Error struct {
	// Config names the config type, e.g. "gateway" for gateway.Config.
	Config string
	// Field is the Go field refused, e.g. "LockWait".
	Field string
	// Value is the refused value as an operator would write it ("0s",
	// "-1"); empty for a secret, which is never repeated.
	Value string
	// Rule says what the setting must be and why.
	Rule string
}

// Key is "config.Field", the name cmd/hoox maps to a variable.
func (e *Error) Key() string { return e.Config + "." + e.Field }

func (e *Error) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s: %s", e.Key(), e.Rule)
	}
	return fmt.Sprintf("%s=%s: %s", e.Key(), e.Value, e.Rule)
}

// Checker collects the refusals of one Config; Err joins them, so an
// operator sees every bad setting at once instead of one per restart.
type Checker struct {
	config string
	errs   []error
}

// New returns a Checker for the config named config ("gateway", "jobs", …).
func New(config string) *Checker { return &Checker{config: config} }

// Refuse records that field's value breaks rule.
func (c *Checker) Refuse(field, value, rule string) {
	c.errs = append(c.errs, &Error{Config: c.config, Field: field, Value: value, Rule: rule})
}

// Duration refuses d unless lo <= d <= hi (hi <= 0: no upper bound). why
// follows the range in the message.
func (c *Checker) Duration(field string, d, lo, hi time.Duration, why string) {
	if d >= lo && (hi <= 0 || d <= hi) {
		return
	}
	c.Refuse(field, d.String(), durationRange(lo, hi)+why)
}

func durationRange(lo, hi time.Duration) string {
	if hi <= 0 {
		return "must be at least " + lo.String()
	}
	return fmt.Sprintf("must be between %s and %s", lo, hi)
}

// Err is nil when nothing was refused, else every refusal joined.
func (c *Checker) Err() error { return errors.Join(c.errs...) }

// All returns every *Error inside err, in order, however it was joined or
// wrapped.
func All(err error) []*Error {
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if e, ok := err.(*Error); ok {
			out = append(out, e)
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, inner := range u.Unwrap() {
				walk(inner)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}
