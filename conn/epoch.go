package conn

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/connhook"
)

// Epoch is one ZooKeeper session of a Session. Locks are bound to the epoch
// they were acquired in: when it ends, their ephemeral nodes are gone (or
// must be taken as gone). An epoch ends exactly once: on server-confirmed
// expiry, on the local timer, or on Close. Operations on an epoch never run
// in a later session; once the epoch has ended they fail with ErrEpochEnded.
//
// Safe for concurrent use.
type Epoch struct {
	s         *Session
	zc        *zk.Conn // this epoch's own connection; never reused
	sessionID int64
	timeout   time.Duration // negotiated with the server
	passwd    []byte
	wire      *link // its zk.Conn's wire (watch removal: watches.go; pipelining: pipeline.go); nil in tests that make epochs by hand

	ctx    context.Context // cancelled, with the reason as cause, when the epoch ends
	cancel context.CancelCauseFunc

	mu     sync.Mutex    // guards unsafe
	unsafe chan struct{} // see lostSignal; closed by the session's run goroutine
}

func init() {
	connhook.EpochContext = func(ep any) context.Context { return ep.(*Epoch).ctx }
}

func newEpoch(s *Session, zc *zk.Conn, hs handshake) *Epoch {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &Epoch{s: s, zc: zc, sessionID: hs.sessionID, timeout: hs.timeout, passwd: hs.passwd,
		ctx: ctx, cancel: cancel, unsafe: make(chan struct{})}
}

// SessionID is the ZooKeeper session id.
func (e *Epoch) SessionID() int64 { return e.sessionID }

// Timeout is the session timeout the server granted.
func (e *Epoch) Timeout() time.Duration { return e.timeout }

// Done is closed when the epoch ends; Err then tells why. Never nil. It is
// the one way to learn that an epoch ended (Session.Done is the Session's
// final end; a lock holder watches its Lease.Lost instead).
func (e *Epoch) Done() <-chan struct{} { return e.ctx.Done() }

// Err is nil while the epoch lives; after, an error matching ErrEpochEnded
// and the reason (ErrSessionExpired, ErrSessionTimeout or ErrClosed).
func (e *Epoch) Err() error {
	if e.ctx.Err() == nil {
		return nil
	}
	return fmt.Errorf("%w: session 0x%x: %w", ErrEpochEnded, e.sessionID, context.Cause(e.ctx))
}

// lostSignal returns a channel that is closed when a lock taken now in this
// epoch must be taken as lost under the session's error policy: when the
// epoch ends, and, with WithSuspendedAsLost, at the next Suspended. The
// channel is closed, never sent on. Holders see it through Lease.Lost.
func (e *Epoch) lostSignal() <-chan struct{} {
	if !e.s.cfg.suspendedAsLost {
		return e.ctx.Done()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.unsafe
}

// suspend, resume and end are called by the session's run goroutine only.
func (e *Epoch) suspend() {
	e.mu.Lock()
	defer e.mu.Unlock()
	select {
	case <-e.unsafe:
	default:
		close(e.unsafe)
	}
}

func (e *Epoch) resume() {
	e.mu.Lock()
	defer e.mu.Unlock()
	select {
	case <-e.unsafe:
		e.unsafe = make(chan struct{})
	default:
	}
}

func (e *Epoch) end(cause error) {
	e.cancel(cause)
	e.suspend()
}
