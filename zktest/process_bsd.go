//go:build unix && !linux

package zktest

import (
	"syscall"
	"time"
)

// setParentDeathSignal does nothing: only Linux has a parent-death signal.
// Stop and t.Cleanup kill the servers; a crashed test binary leaves them.
func setParentDeathSignal(*syscall.SysProcAttr) {}

// waitStopped does nothing here: without /proc the stop cannot be observed.
func waitStopped(int, time.Duration) error { return nil }
