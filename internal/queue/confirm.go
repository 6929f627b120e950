package queue

import (
	"context"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"go.uber.org/zap"
)

// confirm reads our node before a grant when stale (docs/design.md, "A
// grant after a plain deletion"): gone or another session's, the acquire
// restarts (errRestart); found, the lease gets its czxid.
func (a *attempt) confirm(ctx context.Context) error {
	if a.own == nil {
		a.own = readOwn(ctx, a.ep, zkpath.Join(a.q.path, a.node))
	}
	r := a.own.wait()
	a.own = nil
	switch {
	case r.err != nil:
		return r.err
	case !r.found || r.st.EphemeralOwner != a.ep.SessionID():
		a.q.log.Warn("our lock node is gone (deleted, or with our session); queueing again", zap.String("node", a.node))
		a.node = ""
		return errRestart
	}
	a.stale, a.czxid = false, r.st.Czxid
	return nil
}

// ownRead is a read of our own node in flight, so that await can send it
// beside its GetW.
type ownRead struct {
	res  chan ownStat // buffered: the goroutine never blocks on it
	stop context.CancelFunc
}

// ownStat is an ownRead's answer.
type ownStat struct {
	found bool
	st    *zk.Stat
	err   error
}

// readOwn starts reading node p; wait or end must follow.
func readOwn(ctx context.Context, ep *conn.Epoch, p string) *ownRead {
	ctx, stop := context.WithCancel(ctx)
	r := &ownRead{res: make(chan ownStat, 1), stop: stop}
	go func() {
		found, st, err := connlink.Of(ep).Exists(ctx, p)
		r.res <- ownStat{found: found, st: st, err: err}
	}()
	return r
}

// wait returns the answer.
func (r *ownRead) wait() ownStat {
	s := <-r.res
	r.stop()
	return s
}

// end gives up the answer; no goroutine of the read is left after it.
func (r *ownRead) end() {
	r.stop()
	<-r.res
}

// unsure marks the cache stale; a read of our node in flight is dropped,
// since it was sent before.
func (a *attempt) unsure() {
	a.stale = true
	a.endOwn()
}

// endOwn gives up a read of our node still in flight, if any.
func (a *attempt) endOwn() {
	if a.own != nil {
		a.own.end()
		a.own = nil
	}
}
