package venuefake

import "net/http"

// Drop closes the connection under w without an answer, as a venue's
// front end that loses the request after booking the order does
// (DropAfterAccept). Where w cannot be taken over, the handler aborts,
// which net/http turns into a closed connection too.
func Drop(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}
