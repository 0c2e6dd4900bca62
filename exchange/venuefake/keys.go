package venuefake

import "sync"

// Keys is the one key pair a fake accepts, replaceable while it runs (a
// key deleted or rotated at the venue). It is safe for concurrent use and
// takes no lock of the fake's.
type Keys struct {
	mu          sync.Mutex
	key, secret string
}

// NewKeys is the pair key, secret, each taking its default when empty.
func NewKeys(key, secret, defaultKey, defaultSecret string) *Keys {
	if key == "" {
		key = defaultKey
	}
	if secret == "" {
		secret = defaultSecret
	}
	return &Keys{key: key, secret: secret}
}

// Get is the key and secret, read together.
func (k *Keys) Get() (key, secret string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.key, k.secret
}

// Set replaces the pair.
func (k *Keys) Set(key, secret string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.key, k.secret = key, secret
}
