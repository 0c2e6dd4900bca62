package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Memory is a process's memory as the kernel and the Go runtime see it.
type Memory struct {
	// RSS is the largest resident set sampled during the run (VmRSS);
	// HWM is the kernel's high-water mark since the run began.
	RSS, HWM int64
	// GoSys is memory the Go runtime obtained from the OS; HeapInuse is
	// the live heap spans.
	GoSys, HeapInuse uint64
}

// procStatus reads VmRSS and VmHWM (bytes) of pid ("self" for this process).
func procStatus(pid string) (rss, hwm int64, err error) {
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		for _, k := range []struct {
			prefix string
			dst    *int64
		}{{"VmRSS:", &rss}, {"VmHWM:", &hwm}} {
			if strings.HasPrefix(line, k.prefix) {
				fields := strings.Fields(line[len(k.prefix):])
				if len(fields) > 0 {
					kb, _ := strconv.ParseInt(fields[0], 10, 64)
					*k.dst = kb << 10
				}
			}
		}
	}
	return rss, hwm, sc.Err()
}

// SampleMemory samples pid's VmRSS every interval until the returned stop
// is called, which returns the peak. pid "self" also reports Go runtime
// memory.
//
// Each run's figures are its own: the process first hands back to the OS
// what an earlier run left unused (pid "self"; Go's scavenger does it only
// gradually), and the kernel's high-water mark is reset. Otherwise a run at
// maximum after one over capacity reported the earlier run's queue (303 MiB
// against 70–78 MiB on its own, issue 21's sixth round).
func SampleMemory(ctx context.Context, pid string, interval time.Duration) (stop func() Memory) {
	if pid == "self" {
		debug.FreeOSMemory()
	}
	// "5" resets VmHWM to the current RSS (proc(5), clear_refs).
	_ = os.WriteFile("/proc/"+pid+"/clear_refs", []byte("5"), 0)
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu   sync.Mutex
		peak int64
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if rss, _, err := procStatus(pid); err == nil {
				mu.Lock()
				peak = max(peak, rss)
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() Memory {
		cancel()
		wg.Wait()
		m := Memory{RSS: peak}
		_, m.HWM, _ = procStatus(pid)
		if pid == "self" {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			m.GoSys, m.HeapInuse = ms.Sys, ms.HeapInuse
		}
		return m
	}
}

// String formats m in MiB.
func (m Memory) String() string {
	s := fmt.Sprintf("peak RSS %.1f MiB (high-water %.1f MiB)", mib(m.RSS), mib(m.HWM))
	if m.GoSys > 0 {
		s += fmt.Sprintf(", Go runtime Sys %.1f MiB, HeapInuse %.1f MiB", mib(int64(m.GoSys)), mib(int64(m.HeapInuse)))
	}
	return s
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
