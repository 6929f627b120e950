package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
)

// maxEvents is how many event lines the terminal view keeps under the
// queues.
const maxEvents = 15

// watcher is the live view: the last scan, the events seen, and where it
// prints.
type watcher struct {
	o   options
	w   io.Writer
	tty bool

	mu      sync.Mutex // guards the fields below and the writes to w
	state   string     // the session, as the header says it
	scanned bool       // queues holds a scan
	queues  []Queue
	events  []string
	noPath  bool
}

// watch keeps the view live until ctx ends: it scans the tree leaving a
// watch on every node it lists, waits for one of them to fire (or for the
// session to change state), and scans again. Watches are set again on
// every scan; those that did not fire are then dropped (removed from the
// server when nobody else waits on them), and all of them when it ends.
// Across a reconnect the epoch's watches stay (the server keeps them for
// the session); when the session is lost, the view says so and starts
// over on the next session.
func watch(ctx context.Context, sess *conn.Session, o options, w io.Writer, tty bool) error {
	v := &watcher{o: o, w: w, tty: tty, state: "connected"}
	// Session state changes are shown as they come, also while the view
	// waits for a session; a reconnect asks for a scan.
	subCtx, cancel := context.WithCancel(ctx)
	sub := sess.Subscribe(subCtx)
	rescan := make(chan struct{}, 1)
	stateDone := make(chan struct{})
	defer func() {
		cancel()
		<-stateDone
	}()
	go func() {
		defer close(stateDone)
		for ev := range sub {
			if v.session(ev) {
				select {
				case rescan <- struct{}{}:
				default:
				}
			}
		}
	}()
	var old []<-chan zk.Event // the watches of the previous scan
	var oldEp *conn.Epoch
	drop := func() {
		if oldEp != nil && oldEp.Err() == nil {
			for _, ch := range old {
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				_ = connlink.Of(oldEp).Unwatch(cctx, ch)
				cancel()
			}
		}
		old, oldEp = nil, nil
	}
	defer drop()
	first := true
	for {
		ep, err := connlink.Of(sess).Epoch(ctx)
		if err != nil {
			return err
		}
		sc := &scanner{ep: ep, watch: true, leader: o.cmd == "leader"}
		qs, err := sc.scan(ctx, o.path)
		drop()
		old, oldEp = sc.watches, ep
		switch {
		case errors.Is(err, errNoPath):
			if first {
				return err
			}
			v.setNoPath(true)
			qs = nil
		case err != nil && ep.Err() != nil:
			continue // the epoch ended meanwhile: wait for the next one
		case err != nil:
			return err
		default:
			v.setNoPath(false)
		}
		first = false
		if err := v.update(qs); err != nil {
			return err
		}
		// Wait for a watch to fire, the epoch to end or the same session
		// to come back.
		cases := []reflect.SelectCase{
			{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
			{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ep.Done())},
			{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(rescan)},
		}
		for _, ch := range sc.watches {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
		}
		if i, _, _ := reflect.Select(cases); i == 0 {
			return nil
		}
	}
}

// update shows qs and the changes since the last scan.
func (v *watcher) update(qs []Queue) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.scanned {
		for _, c := range changes(v.queues, qs) {
			v.event(c)
		}
	}
	v.scanned, v.queues = true, qs
	return v.draw()
}

// setNoPath records whether the root exists.
func (v *watcher) setNoPath(missing bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch {
	case missing && !v.noPath:
		v.event(v.o.path + " does not exist; waiting for it")
	case !missing && v.noPath:
		v.event(v.o.path + " exists again")
	}
	v.noPath = missing
}

// session shows a session state change; true when the view must be
// scanned again on the same session (it came back: changes made while we
// were away have fired the watches, but a scan costs little). A new
// session is scanned anyway.
func (v *watcher) session(ev conn.Event) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	rescan := v.sessionLocked(ev)
	_ = v.draw() // a failed write shows up on the next draw of the scan loop
	return rescan
}

func (v *watcher) sessionLocked(ev conn.Event) bool {
	id := func() string {
		if ev.Epoch == nil {
			return ""
		}
		return fmt.Sprintf(" 0x%x", ev.Epoch.SessionID())
	}
	switch ev.State {
	case conn.Suspended:
		v.state = "SUSPENDED"
		v.event("session" + id() + " suspended: connection lost; the view is stale until it comes back")
		return false
	case conn.Reconnected:
		v.state = "connected"
		v.event("session" + id() + " reconnected (same session, watches kept)")
		return true
	case conn.Lost:
		v.state = "LOST"
		v.event(fmt.Sprintf("session%s lost (%v): its watches are gone; reconnecting", id(), ev.Err))
		return false
	case conn.Connected:
		v.state = "connected"
		v.event("new session" + id() + ": view rebuilt")
		return false
	}
	return false
}

// event records an event line; v.mu is held.
func (v *watcher) event(s string) {
	v.events = append(v.events, time.Now().Format("15:04:05")+" "+s)
	if len(v.events) > maxEvents && v.tty {
		v.events = v.events[len(v.events)-maxEvents:]
	}
	if !v.tty && !v.o.json {
		fmt.Fprintln(v.w, v.events[len(v.events)-1])
	}
}

// draw (v.mu held) shows the view: on a terminal the whole screen again (the queues,
// then the last events); otherwise, in text, the view after each batch of
// events, and in JSON one document per line.
func (v *watcher) draw() error {
	now := time.Now()
	if v.o.json {
		doc := struct {
			Time    time.Time `json:"time"`
			Session string    `json:"session"`
			Events  []string  `json:"events"`
			View    any       `json:"view"`
		}{Time: now.UTC(), Session: v.state, Events: v.events}
		v.events = nil
		if v.o.cmd == "leader" {
			doc.View = leaderView(v.o.path, v.queues)
		} else {
			doc.View = LocksView{Path: v.o.path, Queues: append([]Queue{}, v.queues...)}
		}
		return writeJSON(v.w, doc, false)
	}
	var b strings.Builder
	if v.tty {
		b.WriteString("\x1b[H\x1b[2J")
	}
	fmt.Fprintf(&b, "zkrecipes %s %s — watching, session %s — %s\n\n", v.o.cmd, v.o.path, v.state, now.Format("15:04:05"))
	if v.o.cmd == "leader" {
		writeLeader(&b, leaderView(v.o.path, v.queues), now)
	} else {
		writeLocks(&b, LocksView{Path: v.o.path, Queues: v.queues}, now)
	}
	if v.tty {
		b.WriteString("\nevents:\n")
		for _, e := range v.events {
			b.WriteString("  " + e + "\n")
		}
	} else {
		v.events = nil
	}
	_, err := io.WriteString(v.w, b.String())
	return err
}
