package signal

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"strings"
)

// clientOrderIDPrefix marks orders hoox placed, so an operator looking at
// the venue can tell them from manual ones.
const clientOrderIDPrefix = "hx"

// clientOrderIDHashLen is how many base32 characters of the hash are kept:
// 30 characters carry 150 bits, and "hx" plus 30 is 32 characters, inside
// the 36 alphanumerics that Binance, Bybit and OKX all accept.
const clientOrderIDHashLen = 30

// ClientOrderID returns the venue client order ID for execution n of a
// trace's lock key (n grows with every execution, 0 the first time): "hx"
// followed by the first 30 characters of the lower-case, unpadded RFC 4648
// base32 of SHA-256(deployment ‖ lockKey ‖ uint64 big-endian n). The same
// deployment, lock key and n always give the same ID, which is what lets a
// retry after a rollback adopt the order the venue already holds; two
// deployments (staging and production on one account) never share one.
// The deployment is a fixed-length value (db.Deployment), so the
// concatenation is unambiguous; an empty deployment gives the IDs derived
// before deployments existed.
func ClientOrderID(deployment, lockKey string, n int) string {
	h := sha256.New()
	h.Write([]byte(deployment))
	h.Write([]byte(lockKey))
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(n))
	h.Write(buf[:])
	enc := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(h.Sum(nil))
	return clientOrderIDPrefix + strings.ToLower(enc[:clientOrderIDHashLen])
}

// legDomain separates leg IDs from primary IDs in the hash's input: no
// (parent, n) can give the bytes of a (deployment, lock key, n).
const legDomain = "hoox-leg\x00"

// LegClientOrderID returns the client order ID of leg n (n ≥ 1) of the
// order placed under parent (a ClientOrderID): "hx" and 30 base32
// characters of SHA-256(legDomain ‖ parent ‖ uint64 big-endian n), the
// same form as ClientOrderID (32 alphanumerics, which OKX also takes). It
// depends only on the primary's ID, itself derived from the deployment,
// the trace's lock key and the execution, so every attempt and recovery
// path derives the same ID for the same leg, and hoox recognises it as its
// own by the prefix.
func LegClientOrderID(parent string, n int) string {
	h := sha256.New()
	h.Write([]byte(legDomain))
	h.Write([]byte(parent))
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(n))
	h.Write(buf[:])
	enc := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(h.Sum(nil))
	return clientOrderIDPrefix + strings.ToLower(enc[:clientOrderIDHashLen])
}

// IsClientOrderID reports whether id has the shape of a client order ID
// hoox derives: "hx" and 30 lower-case base32 characters. The cancel action
// touches only such orders, never one placed by hand.
func IsClientOrderID(id string) bool {
	if len(id) != len(clientOrderIDPrefix)+clientOrderIDHashLen || !strings.HasPrefix(id, clientOrderIDPrefix) {
		return false
	}
	for _, c := range id[len(clientOrderIDPrefix):] {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}
