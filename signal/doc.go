// Package signal turns the body of a webhook request into a validated,
// normalised trading Signal and derives the identifiers the exactly-once flow
// keys on: the trace ID, the fingerprint and the venue client order ID.
//
// The package is pure (no I/O, no clock, no globals) so that the HTTP
// handler, the CLI and the benchmarks all see exactly the same rules, and so
// that the rules can be fuzzed in isolation.
//
// The handler calls it in the order the design fixes, so each error means one
// thing: Decode (JSON syntax) → Raw.Secret (authentication) → Raw.Signal
// (field validation) → DeriveTrace, or DeriveAccountTrace per account when
// the signal names accounts (each (signal, account) pair is its own unit).
package signal
