package binance

// ErrorClasses exposes the code → class table to the tests.
func ErrorClasses() map[int]Class { return errorClasses }
