//go:build linux

package zktest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// setParentDeathSignal makes the kernel SIGKILL the child when the thread
// that started it exits, so no server outlives a crashed or killed test
// binary. (The Go runtime does not end its threads, except for locked ones.)
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// waitStopped waits until every thread of pid is stopped: SIGSTOP is
// delivered asynchronously, and a thread busy on a CPU can still answer a
// request for a moment after kill(2) returned.
func waitStopped(pid int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		if allStopped(pid) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("zktest: pid %d not stopped after %v", pid, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// allStopped reads the state field of /proc/PID/task/*/stat ("T" or "t").
func allStopped(pid int) bool {
	stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if len(stats) == 0 {
		return false
	}
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		// The command name is in parentheses and may hold spaces; the
		// state is the field after the closing one.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || i+2 >= len(s) || (s[i+2] != 'T' && s[i+2] != 't') {
			return false
		}
	}
	return true
}
