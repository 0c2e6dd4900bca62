package main

import (
	"runtime/debug"
	"testing"
)

// hoox collects garbage half as often as Go's default unless the operator
// chose a GOGC, which it then leaves alone.
func TestDefaultGOGCUnlessTheEnvironmentSetsOne(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })

	defaultGOGC(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Fatalf("without GOGC the GC percent is %d, want %d", got, gcPercent)
	}
	defaultGOGC(func(k string) string {
		if k == "GOGC" {
			return "100"
		}
		return ""
	})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("with GOGC=100 set, hoox changed the GC percent to %d", got)
	}
}
