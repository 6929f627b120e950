package queue

import (
	"context"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/conn"
	"go.uber.org/zap"
)

// confirm makes sure, before a grant decided on a notification of the
// plain deletion of a node of our own session, or on what the session's
// view learnt (stale), that our node is still there in our session, by a
// read of it sent after that (own). Another session's node is never
// deleted by our session's end, so its deletion needs no such read.
//
// The server ends a session by deleting all its ephemeral nodes in one
// transaction, and notifies the watches on them, the session's own among
// them, before it closes the session's connection. A waiter whose watched
// node was of its own session can so be told of that node's deletion
// before it hears of the expiry, and would be granted a node the same
// transaction deleted. A read of our node sent after the notification is
// served after that transaction: it finds our node gone, or is not
// answered in the ended session. So the grant waits for such a read: one
// round trip, or none when it went out beside the getW the wake-up sends
// anyway (await). A getW answered with zk.ErrNoNode needs no such read:
// the server answered it in our session, which it does not do once it has
// begun to end the session, so the deletion it reports was not that end.
// A read that finds our node gone, or another session's, restarts the
// acquire (errRestart); an ended epoch does too. A read that finds it
// gives the grant's lease our node's czxid (connlink.Epoch.NewLease): its
// Fence needs no read of its own.
func (a *attempt) confirm(ctx context.Context) error {
	if a.own == nil {
		a.own = readOwn(ctx, a.ep, conn.JoinPath(a.q.path, a.node))
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
		found, st, err := ep.Exists(ctx, p)
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
