package torture

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// replica is one `hoox serve` process, started again after every kill on
// the same port, so the load balancer's list never changes.
type replica struct {
	idx     int
	url     string
	addr    string
	bin     string
	env     []string
	logPath string

	mu          sync.Mutex
	cmd         *exec.Cmd
	done        chan struct{}
	incarnation int
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// alive reports whether the process runs.
func (r *replica) alive() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.aliveLocked()
}

func (r *replica) aliveLocked() bool {
	if r.cmd == nil {
		return false
	}
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// ensureUp starts the process unless it runs, with skew as its venue
// clock's offset, and waits until it answers /healthz.
func (r *replica) ensureUp(ctx context.Context, skew time.Duration) (started bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.aliveLocked() {
		return false, nil
	}
	log, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(log, "\n=== torture: incarnation %d, clock skew %s ===\n", r.incarnation, skew)
	cmd := exec.Command(r.bin, "serve", "--no-migrate")
	cmd.Env = append(append([]string{}, r.env...), "HOOX_DRILL_CLOCK_SKEW="+skew.String())
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return false, fmt.Errorf("start replica %d: %w", r.idx, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(done)
	}()
	r.cmd, r.done = cmd, done
	r.incarnation++
	deadline := time.Now().Add(60 * time.Second)
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-done:
			return true, fmt.Errorf("replica %d exited while starting (see %s)", r.idx, r.logPath)
		case <-ctx.Done():
			return true, ctx.Err()
		default:
		}
		resp, err := client.Get(r.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true, nil
			}
		}
		if time.Now().After(deadline) {
			return true, fmt.Errorf("replica %d did not answer /healthz within 60s (see %s)", r.idx, r.logPath)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill sends SIGKILL and waits for the process to be gone; false when it
// was not running.
func (r *replica) kill() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.aliveLocked() {
		return false
	}
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.done
	return true
}

// stop shuts the process down gracefully, killing it after a while.
func (r *replica) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.aliveLocked() {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(15 * time.Second):
		_ = r.cmd.Process.Signal(syscall.SIGKILL)
		<-r.done
	}
}
