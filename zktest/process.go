package zktest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// process is a child process in its own process group. Its Wait runs in a
// goroutine that closes done; err is valid after done is closed.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startProcess starts name with args in dir, appending its output to logPath.
// On Linux the child gets SIGKILL if this process dies first.
func startProcess(name string, args []string, dir, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// kill sends SIGKILL to the process group and waits for the process to exit.
func (p *process) kill(ctx context.Context) error {
	if err := signalGroup(p.cmd.Process.Pid, sigKill); err != nil {
		select {
		case <-p.done: // already gone
			return nil
		default:
			return fmt.Errorf("kill pid %d: %w", p.cmd.Process.Pid, err)
		}
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("kill pid %d: %w", p.cmd.Process.Pid, ctx.Err())
	}
}

func (p *process) stopSignal() error {
	if err := signalGroup(p.cmd.Process.Pid, sigStop); err != nil {
		return err
	}
	return waitStopped(p.cmd.Process.Pid, 2*time.Second)
}
func (p *process) contSignal() error { return signalGroup(p.cmd.Process.Pid, sigCont) }
