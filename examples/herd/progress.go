package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progress draws a bar on a terminal, redrawn in place with \r; on anything
// else (a log, a pipe) it prints one line per stage. A nil *progress does
// nothing. Safe for concurrent use.
type progress struct {
	w   io.Writer
	tty bool

	mu     sync.Mutex // guards the fields below
	total  int
	done   int
	stageS string
	begin  time.Time
	drawn  time.Time // of the last redraw
	shown  bool      // the bar is on the screen
}

const barWidth = 30

func newProgress(f *os.File) *progress {
	st, err := f.Stat()
	return &progress{w: f, tty: err == nil && st.Mode()&os.ModeCharDevice != 0}
}

func (p *progress) start(total int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total, p.done, p.begin = total, 0, time.Now()
}

// stage names what is being done now.
func (p *progress) stage(s string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stageS = s
	if !p.tty {
		fmt.Fprintf(p.w, "  %s...\n", s)
		return
	}
	p.draw()
}

// add counts n more steps done.
func (p *progress) add(n int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	if p.tty && time.Since(p.drawn) >= 50*time.Millisecond {
		p.draw()
	}
}

// clear takes the bar off the screen, so that a line can be printed.
func (p *progress) clear() {
	if p == nil || !p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

// redraw puts the bar back after clear.
func (p *progress) redraw() {
	if p == nil || !p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.draw()
}

// finish takes the bar off for good.
func (p *progress) finish() {
	p.clear()
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tty = false // no more drawing
	p.stageS = ""
}

func (p *progress) draw() {
	if !p.tty || p.total == 0 {
		return
	}
	frac := min(float64(p.done)/float64(p.total), 1)
	full := int(frac * barWidth)
	bar := strings.Repeat("█", full) + strings.Repeat("░", barWidth-full)
	fmt.Fprintf(p.w, "\r\033[K%s %3.0f%%  %s  %v", bar, 100*frac, p.stageS, time.Since(p.begin).Round(time.Second))
	p.drawn = time.Now()
	p.shown = true
}
