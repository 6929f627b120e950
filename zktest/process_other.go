//go:build !unix

package zktest

import (
	"errors"
	"syscall"
	"time"
)

// The local backend needs process groups and signals.
const localSupported = false

const (
	sigKill = 0
	sigStop = 0
	sigCont = 0
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

func signalGroup(int, int) error { return errors.New("zktest: signals are not supported on this OS") }

func waitStopped(int, time.Duration) error { return nil }
