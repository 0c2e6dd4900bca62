// Package venuekit holds the mechanics every venue adapter needs and none
// should write again: rounding to a step, decimals from a venue's strings,
// the filter cache, the server-clock offset, rate-limit pauses, and what an
// HTTP answer (or its absence) means for an order. An adapter keeps only
// what is its venue's own: signing, endpoints, its error-code table and the
// shape of its answers.
//
// Outcome rules the adapters share (the gateway's exactly-once rests on
// them; see the Class constants):
//   - A request the transport began writing (httptrace's WroteHeaders or
//     WroteRequest fired, with or without an error) may have reached the
//     venue: a lost answer after it is unknown for a placement.
//   - A request never begun (refused connection, DNS, TLS, cancelled
//     before sending) sent nothing.
//   - An answer without the venue's own error body (a proxy's or gateway's
//     4xx/5xx) after writing is unknown, unless the venue documents that
//     status as a refusal at its door.
//   - A code the venue's table does not list is whatever the adapter's
//     table says for unlisted codes (Binance: unknown).
package venuekit
