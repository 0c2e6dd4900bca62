// Package jobs holds hoox's background work on River: the periodic purge of
// expired trace IDs and the reconcile worker for orders whose answer was lost.
package jobs
