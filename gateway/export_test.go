package gateway

// CopiesWaiting is how many signals are queued behind an identical one in
// flight on s.
func (s *Service) CopiesWaiting() int { return int(s.flights.waiting.Load()) }

// WaitBackground waits for the work s runs after its answers (audit
// writes, a close's exitsAfterClose), as Close does, without closing s.
// Call it only while no Execute is running.
func (s *Service) WaitBackground() { s.background.Wait() }
