package conn

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/go-zookeeper/zk"
)

// The go-zookeeper the wire layer was checked against (it rewrites its frames).
const (
	zkModule  = "github.com/go-zookeeper/zk"
	zkVersion = "v1.0.4"
)

// ErrZKVersion: the program links a go-zookeeper other than v1.0.4, or a
// replaced v1.0.4 without WithPatchedZK (see zktest.CheckWire).
var ErrZKVersion = errors.New("conn: unsupported go-zookeeper version (conn's wire layer is checked against " +
	zkModule + " " + zkVersion + " only)")

// WithPatchedZK lets Connect run a replaced (patched) go-zookeeper v1.0.4,
// else refused with ErrZKVersion; check the copy with zktest.CheckWire.
func WithPatchedZK() Option {
	return option("conn.WithPatchedZK", func(c *config) { c.patchedZK = true })
}

// errZKPatched is checkZKBuild's error for a replacement of v1.0.4.
var errZKPatched = errors.New("to run a patched copy of " + zkVersion +
	", pass conn.WithPatchedZK() to Connect, and run zktest.CheckWire against a server in a test")

// checkZKWith is checkZKBuild, letting a replaced zkVersion through with WithPatchedZK.
func checkZKWith(info *debug.BuildInfo, opts []Option) error {
	err := checkZKBuild(info)
	if errors.Is(err, errZKPatched) {
		var c config
		for _, o := range opts {
			if o != nil {
				_ = o(&c) // Connect reports the errors
			}
		}
		if c.patchedZK {
			return nil
		}
	}
	return err
}

// checkZKBuild returns ErrZKVersion, saying what is linked, for another
// go-zookeeper than zkVersion (also errZKPatched for a replaced zkVersion).
func checkZKBuild(info *debug.BuildInfo) error {
	for _, m := range info.Deps {
		if m.Path != zkModule {
			continue
		}
		if r := m.Replace; r != nil {
			if r.Path == zkModule && r.Version == zkVersion {
				return nil
			}
			linked := strings.TrimSpace(r.Path + " " + r.Version)
			if m.Version == zkVersion {
				return fmt.Errorf("%w: linked %s %s replaced by %s; %w", ErrZKVersion, zkModule, m.Version, linked, errZKPatched)
			}
			return fmt.Errorf("%w: linked %s %s replaced by %s", ErrZKVersion, zkModule, m.Version, linked)
		}
		if m.Version != zkVersion {
			return fmt.Errorf("%w: linked %s %s", ErrZKVersion, zkModule, m.Version)
		}
		return nil
	}
	return nil
}

// CheckWire checks that the go-zookeeper linked keeps what the wire layer
// relies on in v1.0.4, with one ephemeral node and one cut; it closes s.
func (v *sessionView) CheckWire(ctx context.Context) error {
	s := (*Session)(v)
	fails, err := exercise(ctx, s)
	if ctx.Err() != nil {
		s.abandon() // keep ctx's deadline; idempotent, like Close
	} else {
		s.Close() // exercise closes it when it gets that far
	}
	if err != nil {
		return err
	}
	if n := s.stats.splitWrites.Load(); n > 0 {
		fails = append(fails, fmt.Sprintf("%d writes were not one whole frame (the wire layer needs one Write per frame)", n))
	}
	if len(fails) > 0 {
		return fmt.Errorf("%w: go-zookeeper as linked breaks the wire layer: %w", ErrZKVersion, errors.New(strings.Join(fails, "; ")))
	}
	return nil
}

// exercise runs CheckWire's requests: fails lists broken assumptions, err the rest.
func exercise(ctx context.Context, s *Session) (fails []string, err error) {
	subCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	sub := s.Subscribe(subCtx)
	e, err := s.epoch(ctx)
	if err != nil {
		return nil, err
	}
	ep := e.view()
	w := ep.wire
	if ep.zc.SessionID() != ep.sessionID || ep.sessionID == 0 || ep.timeout <= 0 || len(ep.passwd) == 0 {
		fails = append(fails, fmt.Sprintf("connect response not decoded as the first frame (session 0x%x, go-zookeeper's 0x%x, timeout %v, password of %d bytes)",
			ep.sessionID, ep.zc.SessionID(), ep.timeout, len(ep.passwd)))
	}

	var b [8]byte
	_, _ = rand.Read(b[:])
	p := "/zkrecipes-wirecheck-" + hex.EncodeToString(b[:])
	if err = ep.CreateParents(ctx, p); err == nil { // the namespace's root, if missing
		_, err = ep.Create(ctx, p, nil, zk.FlagEphemeral, s.cfg.acl)
	}
	if err != nil {
		return fails, err
	}
	if _, err := ep.Set(ctx, p, []byte("1"), 0); err != nil {
		return append(fails, fmt.Sprintf("a request failed: %v", err)), nil
	}
	if w.lastZxid.Load() <= 0 {
		fails = append(fails, "no response zxid seen on the wire")
	}

	// A watch across a reconnect: go-zookeeper re-sends it (set-watches).
	_, _, ch, err := ep.GetW(ctx, p)
	if err != nil {
		return append(fails, fmt.Sprintf("getw failed: %v", err)), nil
	}
	sent := s.stats.setWatchesSent.Load()
	w.closeAll()
	for {
		ev, ok := <-sub // closed once ctx ends
		if !ok {
			return append(fails, "no reconnect in the same session after a cut"), nil
		}
		if ev.State == Reconnected {
			break
		}
		if ev.State == Lost || ev.State == Closed {
			return append(fails, fmt.Sprintf("the session ended after a cut: %v", ev.Err)), nil
		}
	}
	if _, err := ep.Set(ctx, p, []byte("2"), 1); err != nil {
		return append(fails, fmt.Sprintf("a request after the reconnect failed: %v", err)), nil
	}
	select {
	case ev := <-ch:
		if ev.Type != zk.EventNodeDataChanged {
			fails = append(fails, fmt.Sprintf("the watch set before a reconnect got %v, not the data change", ev.Type))
		}
	case <-ctx.Done():
		fails = append(fails, "the watch set before a reconnect did not fire")
	}
	if s.stats.setWatchesSent.Load() == sent {
		fails = append(fails, "no set-watches request (opcode 101) written after the reconnect")
	}

	_, _, ch, err = ep.GetW(ctx, p)
	if err != nil {
		return append(fails, fmt.Sprintf("getw failed: %v", err)), nil
	}
	if err := ep.Unwatch(ctx, ch); err != nil {
		fails = append(fails, fmt.Sprintf("removing a watch failed: %v", err))
	}
	if _, _, err := ep.Get(ctx, p); err != nil {
		fails = append(fails, fmt.Sprintf("a request after a watch removal failed: %v", err))
	}
	if err := ep.Delete(ctx, p, -1); err != nil {
		return fails, err
	}
	if err := s.Close(); err != nil {
		return fails, err
	}
	if w.closeXid.Load() == 0 {
		fails = append(fails, "no close request (opcode -11) written by Close")
	}
	return fails, nil
}
