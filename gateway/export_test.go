package gateway

// CopiesWaiting is how many signals are queued behind an identical one in
// flight on s.
func (s *Service) CopiesWaiting() int { return int(s.flights.waiting.Load()) }
