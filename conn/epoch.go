package conn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/logfield"
)

// Epoch is one ZooKeeper session of a Session, the one a Lease was taken
// in. It ends exactly once (see Err). Safe for concurrent use.
type Epoch struct {
	epochLink // what the recipes reach (link.go)

	s         *Session
	zc        *zk.Conn // this epoch's own connection; never reused
	sessionID int64
	timeout   time.Duration // negotiated with the server
	passwd    []byte
	wire      *link // its zk.Conn's wire

	ctx    context.Context // cancelled, with the reason as cause, when the epoch ends
	cancel context.CancelCauseFunc

	mu     sync.Mutex    // guards unsafe
	unsafe chan struct{} // see lostSignal; closed by the session's run goroutine

	confirmed atomic.Int64 // send time (unix ns) of the last request answered through the leader
	rtt       atomic.Int64 // the last quorum sync's round trip (ns)

	inFlight chan struct{} // a token per request in flight (await)
}

// maxInFlight bounds an epoch's requests in flight (see await).
const maxInFlight = 64

func newEpoch(s *Session, l *zkLink) *Epoch {
	ctx, cancel := context.WithCancelCause(context.Background())
	hs := l.hs.Load()
	e := &Epoch{s: s, zc: l.zc, wire: l.link, sessionID: hs.sessionID, timeout: hs.timeout, passwd: hs.passwd,
		ctx: ctx, cancel: cancel, unsafe: make(chan struct{}), inFlight: make(chan struct{}, maxInFlight)}
	e.confirmed.Store(l.connectSent.Load()) // the session's creation is the leader's
	e.epochLink = connlink.NewLink[connlink.Epoch[*Lease]]((*epochView)(e))
	return e
}

// SessionID is the ZooKeeper session id.
func (e *Epoch) SessionID() int64 { return e.sessionID }

// Done is closed when the epoch ends; Err then tells why.
func (e *Epoch) Done() <-chan struct{} { return e.ctx.Done() }

// Err is nil while the epoch lives; after, an error matching ErrEpochEnded
// and the reason (ErrSessionExpired, ErrSessionTimeout or ErrClosed).
func (e *Epoch) Err() error {
	if e.ctx.Err() == nil {
		return nil
	}
	return fmt.Errorf("%w: session 0x%x: %w", ErrEpochEnded, e.sessionID, context.Cause(e.ctx))
}

// lostSignal is closed when a lock taken now must be taken as lost: at the
// epoch's end or, with WithSuspendedAsLost, at the next Suspended.
func (e *Epoch) lostSignal() <-chan struct{} {
	if !e.s.cfg.suspendedAsLost {
		return e.ctx.Done()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.unsafe
}

// suspend and resume are called by the session's run goroutine only.
func (e *Epoch) suspend() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !closed(e.unsafe) {
		close(e.unsafe)
	}
}

func (e *Epoch) resume() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if closed(e.unsafe) {
		e.unsafe = make(chan struct{})
	}
}

// confirm records that a request sent at sent was answered via the leader.
func (e *Epoch) confirm(sent time.Time) {
	for {
		old := e.confirmed.Load()
		if sent.UnixNano() <= old || e.confirmed.CompareAndSwap(old, sent.UnixNano()) {
			return
		}
	}
}

// The quorum timer's margin needs 1 + quorumLimit ≤ 2·quorumPeriod/3
// (docs/design.md, "The quorum timer's numbers").
const (
	quorumPeriod = 12 // a sync every T/12
	quorumLimit  = 7  // the epoch ends 7T/12 after the last proof
	quorumLate   = 4  // a tick 4T/12 late says this process was paused
)

// quorumDeadline is when the epoch ends under the quorum timer.
func (e *Epoch) quorumDeadline() time.Time {
	at := max(e.confirmed.Load(), e.wire.keptSince(e.sessionID))
	return time.Unix(0, at).Add(e.timeout * quorumLimit / quorumPeriod)
}

// keepQuorum runs l's epoch's quorum timer: a sync every T/12, and the
// epoch's loss past quorumDeadline.
func (s *Session) keepQuorum(l *zkLink) {
	ep := l.epoch
	l.quorum.Store(ep)
	sync := func() {
		s.helpers.Add(1)
		go func() {
			defer s.helpers.Done()
			if err := s.quorumSync(l); errors.Is(err, zk.ErrSessionExpired) {
				s.inbox.put(message{lost: ep, cause: ErrSessionExpired})
			}
		}()
	}
	s.helpers.Add(1)
	go func() {
		defer s.helpers.Done()
		tick := time.NewTicker(ep.timeout / quorumPeriod)
		defer tick.Stop()
		t := time.NewTimer(time.Until(ep.quorumDeadline()))
		defer t.Stop()
		sync()
		quiet := ep.timeout * quorumLate / quorumPeriod
		last, wasLate := time.Now(), false // the last tick, and whether it came late: this process was paused
		for {
			select {
			case <-ep.ctx.Done():
				return
			case <-tick.C:
				if late := time.Since(last); late > quiet {
					wasLate = true
					s.log.Warn("this process was paused (its timer ran late)", logfield.Session("session", ep.sessionID), zap.Duration("for", late))
				} else {
					wasLate = false
					s.leaveSilent(l)
				}
				last = time.Now()
				sync()
			case <-t.C:
				if wait := time.Until(ep.quorumDeadline()); wait > 0 {
					t.Reset(wait) // a sync was answered meanwhile
					continue
				}
				s.inbox.put(message{lost: ep, cause: ErrSessionTimeout, paused: wasLate || time.Since(last) > quiet})
				return
			}
		}
	}()
}

// leaveSilent drops l's connection when its server has sent nothing for
// 2T/12 (two sync periods) and the quorum deadline is nearer than what a
// reconnect elsewhere needs, T/6 plus four of the last sync's round trips,
// and there is another server to try: go-zookeeper then tries the next
// one while a proof from there can still come in time (go-zookeeper alone
// waits 2T/3 for a silence to end).
func (s *Session) leaveSilent(l *zkLink) {
	if len(s.servers) < 2 {
		return // redialing the same address would cut the requests in flight for nothing
	}
	ep := l.epoch
	silent := time.Since(time.Unix(0, l.lastHeard.Load()))
	need := ep.timeout/6 + 4*time.Duration(ep.rtt.Load())
	if silent < 2*ep.timeout/quorumPeriod || time.Until(ep.quorumDeadline()) > need {
		return
	}
	if addr, ok := l.drop(); ok {
		s.stats.serversLeft.Add(1)
		s.log.Info("server silent; trying the next one", logfield.Session("session", ep.sessionID),
			zap.String("server", addr), zap.Duration("silent", silent))
	}
}
