package jobs

// WithNotifier gives a worker the notifier NewClient would, so an external
// test can work it with rivertest and see what it queues.
func (w *ReconcileWorker) WithNotifier(n *Notifier) *ReconcileWorker { w.notifier = n; return w }

// WithNotifier gives the sweeper the notifier NewClient would.
func (w *SweepWorker) WithNotifier(n *Notifier) *SweepWorker { w.notifier = n; return w }

// WithAfterRecord makes the worker call f once a look's commit is done,
// before the follow-on work (a sibling's cancel, an entry's legs): f
// panics to stand for a replica killed there.
func (w *FollowWorker) WithAfterRecord(f func()) *FollowWorker { w.afterRecord = f; return w }
