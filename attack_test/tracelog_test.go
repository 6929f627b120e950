package attack_test

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/zkrecipes/zkrecipes/metrics"
)

// traceLog keeps a session's log lines and state transitions, time-stamped,
// for a failing test to print.
type traceLog struct {
	mu    sync.Mutex
	lines []string
	t0    time.Time
}

func newTraceLog() *traceLog { return &traceLog{t0: time.Now()} }

func (d *traceLog) add(s string) {
	d.mu.Lock()
	d.lines = append(d.lines, fmt.Sprintf("%8.3fs %s", time.Since(d.t0).Seconds(), s))
	d.mu.Unlock()
}

func (d *traceLog) note(f string, a ...any) { d.add("TEST " + fmt.Sprintf(f, a...)) }

// hooks reports the session's transitions into the log.
func (d *traceLog) hooks() metrics.Hooks {
	return metrics.Hooks{State: func(e metrics.Transition) {
		if e.Err != nil {
			d.add(fmt.Sprintf("STATE %s(session 0x%x: %v)", e.State, e.SessionID, e.Err))
			return
		}
		d.add(fmt.Sprintf("STATE %s(session 0x%x)", e.State, e.SessionID))
	}}
}

func (d *traceLog) dump() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.lines, "\n")
}

func (d *traceLog) Write(p []byte) (int, error) {
	d.add(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (d *traceLog) Sync() error { return nil }

func (d *traceLog) logger() *zap.Logger {
	enc := zap.NewDevelopmentEncoderConfig()
	enc.TimeKey = ""
	return zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(enc), d, zap.DebugLevel))
}
