//go:build unix && !linux

package zktest

import "syscall"

// setParentDeathSignal does nothing: only Linux has a parent-death signal.
// Stop and t.Cleanup kill the servers; a crashed test binary leaves them.
func setParentDeathSignal(*syscall.SysProcAttr) {}
