package conn

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/logfield"
	"github.com/zkrecipes/zkrecipes/metrics"
	"go.uber.org/zap"
)

var errRetired = errors.New("conn: connection retired")

// Session is one client of an ensemble across many ZooKeeper sessions
// (epochs), each on a new connection. Safe for concurrent use.
type Session struct {
	sessionLink // what the recipes reach (link.go)

	cfg     config
	servers []string
	creds   []string // digest "user:password" entries sent at the start of every epoch: cfg.digest, then ident
	sealed  []zk.ACL // the ACL of a lock node only this session may change (sealACL)
	log     *zap.Logger
	stats   *counters
	silent  *silentSet // servers found silent lately, skipped by new connections while others answer
	shared  sync.Map   // recipes' per-session state (connlink.Session.Shared); its own locking

	inbox   *fifo[message] // events from go-zookeeper callbacks and helpers, for run
	closing chan struct{}  // closed by Close (once); run then shuts down
	done    chan struct{}  // closed by run when shutdown is complete
	once    sync.Once
	helpers sync.WaitGroup // goroutines started by run: closers, auth, event drains

	abandoning atomic.Bool // set by abandon: close without waiting for answers (abandonLink)

	mu    sync.Mutex                // guards the fields below
	state State                     // last transition
	cur   *Epoch                    // the live epoch, nil between epochs
	ready chan struct{}             // closed when an epoch becomes live; replaced when it ends
	subs  map[*fifo[Event]]struct{} // Subscribe's queues; nil from the step that sent Closed on
	fail  error                     // why the last attempt at a session failed; nil once one began

	// Owned by the run goroutine.
	active *zkLink     // the zk.Conn of the current (or next) epoch
	timer  *time.Timer // local expiry timer while Suspended
	redial *time.Timer // the next attempt after a failed one (see scheduleRedial)
	failed int         // attempts failed in a row since the last epoch began
}

// zkLink is one zk.Conn and what run knows of it.
type zkLink struct {
	*link
	zc        *zk.Conn
	epoch     *Epoch        // set when its session begins
	live      bool          // epoch handed to callers (auth done)
	suspended bool          // disconnected; also while authenticating (then with no transition)
	authed    int           // credentials accepted so far (go-zookeeper re-sends these on reconnect)
	authWait  bool          // authentication was cut by a disconnect: resume it on reconnect
	drained   chan struct{} // closed when go-zookeeper's event loop has ended
}

// Connect starts a session and waits, bounded by ctx, until the first
// ZooKeeper session is established. When ctx ends first, the error matches
// ctx's and names the servers (and ErrAuthFailed after a refusal).
func Connect(ctx context.Context, servers []string, opts ...Option) (*Session, error) {
	if info, ok := debug.ReadBuildInfo(); ok { // tests record no deps: TestZKVersionPinned checks go.mod
		if err := checkZKWith(info, opts); err != nil {
			return nil, err
		}
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("no ZooKeeper server given: %w", ErrInvalidArgument)
	}
	for _, srv := range servers {
		if _, _, err := net.SplitHostPort(srv); err != nil {
			return nil, fmt.Errorf("server address %q: %w: %w", srv, err, ErrInvalidArgument)
		}
	}
	cfg := defaultConfig()
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("nil option: %w", ErrInvalidArgument)
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	var b [24]byte // the session's own digest identity; never logged
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("conn: making the session's identity: %w", err)
	}
	user, password := "zkrecipes-"+hex.EncodeToString(b[:8]), hex.EncodeToString(b[8:])
	s := &Session{
		cfg:     cfg,
		servers: append([]string(nil), servers...),
		creds:   append(append([]string(nil), cfg.digest...), user+":"+password),
		sealed:  sealACL(cfg.acl, user, password),
		log:     cfg.logger,
		stats:   newCounters(),
		silent:  newSilentSet(cfg.sessionTimeout),
		inbox:   newFifo[message](),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
		ready:   make(chan struct{}),
		subs:    make(map[*fifo[Event]]struct{}),
	}
	s.sessionLink = connlink.NewLink[connlink.Session[*Epoch]]((*sessionView)(s))
	if err := s.dial(); err != nil {
		return nil, err
	}
	go s.run()

	if _, err := s.epoch(ctx); err != nil {
		s.abandon()
		if ctx.Err() == nil {
			return nil, err
		}
		err = fmt.Errorf("conn: no session established with servers %v: %w", servers, ctx.Err())
		if cause := context.Cause(ctx); cause != ctx.Err() {
			err = fmt.Errorf("%w (%w)", err, cause)
		}
		return nil, s.withLastFailure(err)
	}
	return s, nil
}

// SessionID is the live epoch's ZooKeeper session id, 0 while there is
// none (between a Lost and the next Connected, or after Close): what a
// service logs at start-up, since the first Connected comes before any
// Subscribe can see it.
func (s *Session) SessionID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil || s.cur.ctx.Err() != nil {
		return 0
	}
	return s.cur.sessionID
}

// State is the last transition.
func (s *Session) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// sealACL is acl without WRITE and ADMIN, plus ALL for the digest identity.
func sealACL(acl []zk.ACL, user, password string) []zk.ACL {
	out := make([]zk.ACL, 0, len(acl)+1)
	for _, a := range acl {
		if a.Perms &^= zk.PermWrite | zk.PermAdmin; a.Perms != 0 {
			out = append(out, a)
		}
	}
	return append(out, zk.DigestACL(zk.PermAll, user, password)...)
}

// epoch returns the live epoch, waiting (bounded by ctx) while there is none.
func (s *Session) epoch(ctx context.Context) (*Epoch, error) {
	for {
		s.mu.Lock()
		ep, ready := s.cur, s.ready
		s.mu.Unlock()
		if ep != nil && ep.ctx.Err() == nil {
			return ep, nil
		}
		select {
		case <-ready:
		case <-s.closing:
			return nil, ErrClosed
		case <-ctx.Done():
			return nil, s.withLastFailure(fmt.Errorf("conn: waiting for a ZooKeeper session: %w", context.Cause(ctx)))
		}
	}
}

// Done is closed once Close has stopped the Session's goroutines.
func (s *Session) Done() <-chan struct{} { return s.done }

// Close ends the current epoch (its ephemeral nodes go with it) and stops
// the session's goroutines; idempotent. It returns when the server answers
// or the connection is down, else within about a second (13 s at worst).
// A session the server may still keep (no server answered the close, or
// the local timer gave it up before) is left to the server's expiry.
func (s *Session) Close() error {
	s.once.Do(func() { close(s.closing) })
	<-s.done
	return nil
}

// abandon is Close without waiting for the close request's answer.
func (s *Session) abandon() {
	s.abandoning.Store(true)
	_ = s.Close()
}

// run owns the state machine: only it begins and ends epochs and sends transitions.
func (s *Session) run() {
	defer close(s.done)
	for {
		var timerC, redialC <-chan time.Time
		if s.timer != nil {
			timerC = s.timer.C
		}
		if s.redial != nil {
			redialC = s.redial.C
		}
		select {
		case <-s.inbox.signal:
			for _, m := range s.inbox.drain() {
				s.handle(m)
			}
		case <-timerC:
			s.timer = nil
			s.log.Warn("disconnected for the session timeout; taking the session as lost",
				logfield.Session("session", s.active.epoch.sessionID), zap.Duration("timeout", s.active.epoch.timeout))
			s.loseEpoch(ErrSessionTimeout)
		case <-redialC:
			s.redial = nil
			if err := s.dial(); err != nil {
				s.scheduleRedial(err)
			}
		case <-s.closing:
			s.shutdown()
			return
		}
	}
}

type message struct {
	l       *zkLink
	ev      zk.Event
	authErr error
	authed  bool   // AddAuth finished (authErr says how)
	authN   int    // with authed: credentials accepted
	lost    *Epoch // end this epoch with cause: a request was answered "expired", or its quorum timer ran out
	cause   error
	paused  bool // with lost: this process was paused when the quorum timer ran out
}

func (s *Session) handle(m message) {
	if ep := m.lost; ep != nil {
		// go-zookeeper ends a session only when a handshake says so, yet a
		// server may keep answering pings for a session closed under it.
		if l := s.active; l != nil && l.epoch == ep && l.live && ep.ctx.Err() == nil {
			why := "a request was answered 'session expired'"
			switch {
			case m.cause == ErrSessionTimeout && m.paused:
				why = "this process was paused past 7/12 of the session timeout"
			case m.cause == ErrSessionTimeout:
				why = "no sync answered through the ensemble's leader within 7/12 of the session timeout"
			}
			s.log.Warn(why+"; taking the session as lost", logfield.Session("session", ep.sessionID), zap.Duration("timeout", ep.timeout))
			s.loseEpoch(m.cause)
		}
		return
	}
	l := m.l
	if l != s.active {
		return // a retired zk.Conn
	}
	if m.authed {
		l.authed = m.authN
		switch {
		case m.authErr == nil:
			s.beginEpoch(l)
		case l.epoch.ctx.Err() == nil && isConnectionLoss(m.authErr):
			// Cut off: go-zookeeper re-sends what it accepted on reconnect.
			if l.suspended {
				l.authWait = true
			} else {
				s.authenticate(l)
			}
		default:
			// Refused: redial after a backoff, not a storm of sessions.
			err := fmt.Errorf("conn: sending credentials: %w", m.authErr)
			if errors.Is(m.authErr, zk.ErrAuthFailed) {
				err = fmt.Errorf("%w (session 0x%x): %w", ErrAuthFailed, l.epoch.sessionID, m.authErr)
			}
			s.retire(l)
			s.scheduleRedial(err)
		}
		return
	}
	switch m.ev.State {
	case zk.StateHasSession:
		switch {
		case l.epoch == nil:
			l.epoch = newEpoch(s, l)
			s.authenticate(l)
		case l.suspended:
			l.suspended = false
			s.stopTimer()
			if l.live {
				l.epoch.resume()
				s.log.Info("reconnected", logfield.Session("session", l.epoch.sessionID))
				s.transition(Reconnected, l.epoch, nil)
			} else if l.authWait { // reconnected while authenticating: no transition to tell
				l.authWait = false
				s.authenticate(l)
			}
		}
	case zk.StateDisconnected:
		s.disconnected(l)
	case zk.StateExpired:
		s.log.Warn("session expired", logfield.Session("session", l.epoch.sessionID))
		s.loseEpoch(ErrSessionExpired)
	}
}

// disconnected suspends l's epoch and starts the local expiry timer.
func (s *Session) disconnected(l *zkLink) {
	if l.epoch == nil || l.suspended || l.epoch.ctx.Err() != nil {
		return
	}
	l.suspended = true
	ep := l.epoch
	lastHeard := time.Unix(0, l.lastHeard.Load())
	wait := time.Until(lastHeard.Add(ep.timeout))
	s.timer = time.NewTimer(max(wait, 0))
	if l.live && s.cfg.quorumTimer {
		wait = min(wait, time.Until(ep.quorumDeadline())) // the deadline in force
	}
	if !l.live {
		// Not handed out yet: no Suspended, but the timer runs.
		s.log.Info("disconnected while authenticating", logfield.Session("session", ep.sessionID), zap.Duration("lost_in", wait))
		return
	}
	ep.suspend()
	s.log.Info("suspended", logfield.Session("session", ep.sessionID), zap.Duration("lost_in", wait))
	s.transition(Suspended, ep, nil)
}

// authenticate sends the credentials not yet accepted (own identity last)
// and, under the quorum timer, a first sync, then reports to run.
func (s *Session) authenticate(l *zkLink) {
	from := l.authed
	s.helpers.Add(1)
	go func() {
		defer s.helpers.Done()
		n, err := from, error(nil)
		for _, cred := range s.creds[from:] {
			s.stats.count(metrics.OpAuth)
			if err = l.zc.AddAuth("digest", []byte(cred)); err != nil {
				break
			}
			n++
		}
		if err == nil && s.cfg.quorumTimer {
			err = s.quorumSync(l) // the quorum timer starts from it
		}
		s.inbox.put(message{l: l, authed: true, authN: n, authErr: err})
	}()
}

// quorumSync sends a sync; its answer confirms l's epoch from its send
// time (docs/design.md, "The quorum timer's numbers").
func (s *Session) quorumSync(l *zkLink) error {
	sent := time.Now()
	s.stats.quorumSyncs.Add(1)
	err := l.link.sync(l.epoch.ctx.Done())
	if h := s.cfg.hooks.Request; h != nil {
		h(metrics.Request{Op: metrics.OpSync, Duration: time.Since(sent), Err: err})
	}
	if err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	l.epoch.rtt.Store(int64(time.Since(sent)))
	l.epoch.confirm(sent)
	return nil
}

// beginEpoch hands l's epoch to callers.
func (s *Session) beginEpoch(l *zkLink) {
	l.live = true
	s.log.Debug("session established", logfield.Session("session", l.epoch.sessionID), zap.Duration("timeout", l.epoch.timeout))
	// One critical section: who sees the epoch subscribed after Connected.
	s.failed = 0
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = nil
	s.cur = l.epoch
	close(s.ready)
	s.transitionLocked(Connected, l.epoch, nil)
	if s.cfg.quorumTimer {
		s.keepQuorum(l)
	}
}

// loseEpoch ends the active epoch and opens the next session.
func (s *Session) loseEpoch(cause error) {
	l := s.active
	s.endEpoch(l, cause, Lost)
	s.retire(l)
	if cause == ErrSessionTimeout && l.epoch != nil {
		s.closeGivenUp(l.epoch)
	}
	if err := s.dial(); err != nil {
		s.scheduleRedial(err)
	}
}

// Redial backoff: half to all of redialBase·2^(n-1) after n failures, at most redialMax.
const (
	redialBase = 250 * time.Millisecond
	redialMax  = 30 * time.Second
)

// scheduleRedial records why an attempt failed and arms the next. Run only.
func (s *Session) scheduleRedial(why error) {
	s.failed++
	d := backoff(redialBase, redialMax, s.failed)
	d = d/2 + time.Duration(mrand.Int64N(int64(d/2)+1))
	s.log.Warn("no session; trying again", zap.Error(why), zap.Int("failed", s.failed), zap.Duration("in", d))
	s.mu.Lock()
	s.fail = why
	s.mu.Unlock()
	s.redial = time.NewTimer(d)
}

// attemptFailed records why a try at a server failed, while no epoch is
// live: Connect's and a waiting call's error then say it.
func (s *Session) attemptFailed(why error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		s.fail = why
	}
}

// withLastFailure adds to err why the last attempt at a session failed.
func (s *Session) withLastFailure(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail == nil {
		return err
	}
	return fmt.Errorf("%w; last attempt: %w", err, s.fail)
}

func (s *Session) endEpoch(l *zkLink, cause error, st State) {
	s.stopTimer()
	ep := l.epoch
	if ep == nil || ep.ctx.Err() != nil {
		if st == Closed {
			s.transition(Closed, ep, ErrClosed)
		}
		return
	}
	ep.cancel(cause)
	ep.suspend()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == ep {
		s.cur = nil
		s.ready = make(chan struct{})
	}
	if l.live || st == Closed {
		s.transitionLocked(st, ep, cause)
	}
}

func (s *Session) stopTimer() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}

// dial opens a new zk.Conn; its first session will be the next epoch.
func (s *Session) dial() error {
	l := &zkLink{link: newLink(s.cfg.dialer, s.stats, s.cfg.hooks.Watches), drained: make(chan struct{})}
	l.handshakeWait = s.handshakeWait()
	l.silent = s.silent
	l.failed = s.attemptFailed
	zc, events, err := zk.Connect(s.servers, s.cfg.sessionTimeout,
		zk.WithDialer(l.dialer),
		zk.WithHostProvider(&hostProvider{DNSHostProvider: zk.NewDNSHostProvider(), link: l.link}),
		zk.WithLogger(zkLogger{s.log.Sugar()}),
		zk.WithLogInfo(false),
		zk.WithEventCallback(func(ev zk.Event) { s.onEvent(l, ev) }),
	)
	if err != nil {
		return fmt.Errorf("conn: connecting to %v: %w", s.servers, err)
	}
	l.zc = zc
	s.active = l
	// Not one of s.helpers: closeLink waits for it, bounded.
	go func() {
		defer close(l.drained)
		for range events { // closed when go-zookeeper's loop ends
		}
	}()
	return nil
}

// handshakeWait is how long one server may leave a connect request
// unanswered: as ZooKeeper's Java client, the session timeout shared among
// the servers, but at least minHandshakeWait.
func (s *Session) handshakeWait() time.Duration {
	return max(s.cfg.sessionTimeout/time.Duration(len(s.servers)), minHandshakeWait)
}

const minHandshakeWait = 500 * time.Millisecond

// onEvent runs on go-zookeeper's goroutine and must not block.
func (s *Session) onEvent(l *zkLink, ev zk.Event) {
	switch {
	case ev.Type == zk.EventSession:
		if ev.State == zk.StateExpired {
			l.retired.Store(true) // no new session on this zk.Conn, ever
		}
		if ev.State == zk.StateDisconnected {
			l.readerBack() // go-zookeeper's reader has ended (see link.beginClose)
		}
		switch ev.State {
		case zk.StateHasSession, zk.StateDisconnected, zk.StateExpired:
			s.inbox.put(message{l: l, ev: ev})
		}
	case ev.Type != zk.EventNotWatching:
		s.stats.watchEvents.Add(1)
	}
}

// retire closes a zk.Conn in the background; run never waits for it.
func (s *Session) retire(l *zkLink) {
	l.retired.Store(true)
	s.helpers.Add(1)
	go func() {
		defer s.helpers.Done()
		s.closeLink(l)
	}()
}

// closeLink closes the session on the server if it can, then the sockets;
// go-zookeeper's goroutines still stuck after cfg.closeWait are left behind.
func (s *Session) closeLink(l *zkLink) {
	deadline := time.Now().Add(s.cfg.closeWait)
	l.retired.Store(true)
	if !l.beginClose(deadline) {
		s.log.Error("go-zookeeper's reader did not finish its frame; closing anyway")
	}
	if s.abandoning.Load() {
		s.abandonLink(l, deadline)
	} else {
		l.zc.Close() // at most ~3s when the server is unreachable
		l.closeAll()
	}
	if !waitFor(l.drained, time.Until(deadline)) {
		s.log.Error("go-zookeeper's goroutines did not end after the connection was closed; leaving them behind",
			zap.Duration("waited", s.cfg.closeWait))
	}
}

// waitFor reports whether ch closed within d.
func waitFor(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return closed(ch) // both ready: select may have picked the timer
	}
}

// abandonLink closes l's sockets once the close request is written.
func (s *Session) abandonLink(l *zkLink, deadline time.Time) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.zc.Close()
	}()
	if l.cur.Load() != nil { // a session: the close request is written next
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-l.closeSent:
		case <-done:
		case <-t.C:
		}
		t.Stop()
	}
	l.closeAll()
	if closed(l.closeSent) {
		waitFor(done, time.Until(deadline))
	}
}

func (s *Session) shutdown() {
	if s.redial != nil {
		s.redial.Stop()
	}
	l := s.active
	s.endEpoch(l, ErrClosed, Closed)
	s.closeLink(l)
	s.helpers.Wait()
}

func (s *Session) transition(st State, ep *Epoch, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.transitionLocked(st, ep, cause)
}

// transitionLocked records st and tells every subscriber, s.mu held. Closed
// sets subs nil in the same step: no subscription misses it or waits after it.
func (s *Session) transitionLocked(st State, ep *Epoch, cause error) {
	ev := Event{State: st, Epoch: ep, Err: cause, Time: time.Now()}
	s.state = st
	if h := s.cfg.hooks.State; h != nil {
		var id int64
		if ep != nil {
			id = ep.SessionID()
		}
		h(metrics.Transition{State: st.String(), SessionID: id, Err: cause, Time: ev.Time})
	}
	for sub := range s.subs {
		sub.put(ev)
	}
	if st == Closed {
		s.subs = nil
	}
}

// zkLogger routes go-zookeeper's log lines to zap at Debug.
type zkLogger struct{ l *zap.SugaredLogger }

func (z zkLogger) Printf(format string, args ...any) { z.l.Debugf("zk: "+format, args...) }
