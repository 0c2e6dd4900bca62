package api

import (
	"crypto/sha256"
	"crypto/subtle"
)

// equalSecret compares a secret someone sent with the one configured, in
// constant time. Both are hashed first: subtle.ConstantTimeCompare returns
// at once when the lengths differ, so comparing the raw bytes would let an
// answer's time tell a guesser the secret's length. Every secret hoox
// checks (webhook secret, admin token, CSRF token) goes through here.
func equalSecret(given, want string) bool {
	g, w := sha256.Sum256([]byte(given)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}
