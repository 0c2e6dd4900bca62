package venuefake

import "time"

// Late is a venue backend's queue of placements answered before they were
// processed (each fake's LateInEngine fault): an order reaches the engine
// once the fake's clock passes its due time, and the fake's own rule
// (recvWindow, expTime, the client ID, the book's filters) books or
// refuses it there. It is not safe for concurrent use: a fake calls it
// under its own lock.
type Late[O any] struct {
	queue   []lateOrder[O]
	refused int
}

type lateOrder[O any] struct {
	order O
	due   time.Time
}

// Add queues o to reach the engine at due.
func (l *Late[O]) Add(o O, due time.Time) {
	l.queue = append(l.queue, lateOrder[O]{order: o, due: due})
}

// Run hands every order due by now to reach, oldest first; reach reports
// whether the engine booked it, and one it refused is counted (Refused).
func (l *Late[O]) Run(now time.Time, reach func(o O, due time.Time) (booked bool)) {
	kept := l.queue[:0]
	for _, q := range l.queue {
		if now.Before(q.due) {
			kept = append(kept, q)
			continue
		}
		if !reach(q.order, q.due) {
			l.refused++
		}
	}
	l.queue = kept
}

// Pending counts the orders that have not reached the engine.
func (l *Late[O]) Pending() int { return len(l.queue) }

// Refused counts the orders the engine refused when they reached it:
// nothing was booked for them.
func (l *Late[O]) Refused() int { return l.refused }
