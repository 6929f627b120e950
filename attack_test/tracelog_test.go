package attack_test

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/zkrecipes/zkrecipes/conn"
)

// traceLog keeps a session's log lines and state transitions, time-stamped,
// for a failing test to print.
type traceLog struct {
	conn.NopMetrics
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

func (d *traceLog) State(e conn.Event) { d.add("STATE " + e.String()) }

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
