package localpg

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// acquireLock takes an exclusive flock on path and writes our pid into it
// for the error message a second owner sees. The kernel drops the lock when
// the owner dies, even by kill -9, so a dead owner never blocks a restart;
// the file is opened close-on-exec, so the server we start does not inherit
// (and keep) the lock.
func acquireLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	for tries := 0; ; tries++ {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		owner, _ := os.ReadFile(path)
		ownerPID := strings.TrimSpace(string(owner))
		// Our own pid: this process released the lock a moment ago (Stop,
		// then Start), and a child it was forking at that instant still
		// holds a copy of the descriptor until its exec closes it. That
		// lasts microseconds; another process's lock is a real owner.
		if ownerPID == strconv.Itoa(os.Getpid()) && tries < 100 {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		_ = f.Close()
		return nil, fmt.Errorf("%w (owner pid %s, lock %s)", ErrAlreadyRunning, ownerPID, path)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// postmasterPID is what postmaster.pid says about a server.
type postmasterPID struct {
	pid       int
	socketDir string
	port      int
}

// readPostmasterPID parses the data dir's postmaster.pid: pid, data dir,
// start time, port, socket dir, ... one per line.
func readPostmasterPID(dataDir string) (postmasterPID, bool) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return postmasterPID{}, false
	}
	lines := strings.Split(string(b), "\n")
	var pm postmasterPID
	if pm.pid, err = strconv.Atoi(strings.TrimSpace(lines[0])); err != nil || pm.pid <= 0 {
		// A torn file from a crash during startup: nothing alive to protect.
		return postmasterPID{pid: -1}, true
	}
	if len(lines) > 4 {
		pm.port, _ = strconv.Atoi(strings.TrimSpace(lines[3]))
		pm.socketDir = strings.TrimSpace(lines[4])
	}
	return pm, true
}

// processAlive reports whether pid exists; EPERM means it does, but belongs
// to another user.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	// A server that exited stays a zombie until its parent reaps it, and an
	// orphan's parent may be a container init that never does.
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z' && stat[i+2] != 'X'
	}
	return true
}

// isPostgres reports whether pid is a live postgres server process rather
// than an unrelated process that reused a dead server's pid.
func isPostgres(pid int) bool {
	if !processAlive(pid) {
		return false
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		// No /proc: trust the pid, stopping a server is the safe mistake.
		return true
	}
	name := strings.TrimSpace(string(comm))
	return name == "postgres" || name == "postmaster"
}

// osUser is the account the server runs as when we are root.
type osUser struct {
	name     string
	uid, gid int
}

func lookupUser(name string) (*osUser, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, fmt.Errorf("uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return nil, fmt.Errorf("gid %q: %w", u.Gid, err)
	}
	return &osUser{name: name, uid: uid, gid: gid}, nil
}

// canEnter asks the kernel, as the user, whether dir and every directory
// above it can be entered: exact where a hand-written permission walk would
// have to reimplement groups and ACLs.
func (u *osUser) canEnter(dir string) bool {
	cmd := exec.Command("runuser", "-u", u.name, "--", "test", "-x", dir)
	cmd.Dir = "/"
	return cmd.Run() == nil
}
