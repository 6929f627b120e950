package queue

import (
	"context"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"go.uber.org/zap"
)

// confirm reads our node (own, sent after the wake-up) before a grant
// decided on the plain deletion of a node of our own session, or on the
// session's view (stale): that deletion may be our session's end, told
// before the expiry (package doc, "A grant after a plain deletion"). Our
// node gone, or another session's, restarts the acquire (errRestart); found,
// it gives the lease its czxid.
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

// ownRead is a read of our own node (Exists) in flight on a goroutine of
// its own, so that await can send it beside its getW.
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

// readOwn starts reading node p in ep, bounded by ctx; wait or end must
// follow.
func readOwn(ctx context.Context, ep *conn.Epoch, p string) *ownRead {
	ctx, stop := context.WithCancel(ctx)
	r := &ownRead{res: make(chan ownStat, 1), stop: stop}
	go func() {
		found, st, err := connlink.Of(ep).Exists(ctx, p)
		r.res <- ownStat{found: found, st: st, err: err}
	}()
	return r
}

// wait returns the answer (bounded by the ctx readOwn was given).
func (r *ownRead) wait() ownStat {
	s := <-r.res
	r.stop()
	return s
}

// end gives up the answer; no goroutine of the read is left once end
// returns.
func (r *ownRead) end() {
	r.stop()
	<-r.res
}

// unsure marks the cache stale: a grant now needs a read of our node sent
// after this call (confirm); one in flight was sent before.
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
