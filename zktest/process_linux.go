//go:build linux

package zktest

import "syscall"

// setParentDeathSignal makes the kernel SIGKILL the child when the thread
// that started it exits, so no server outlives a crashed or killed test
// binary. (The Go runtime does not end its threads, except for locked ones.)
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
