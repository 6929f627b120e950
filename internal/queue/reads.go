package queue

import (
	"context"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
)

// async is a read sent on a goroutine of its own, so that await can send
// it beside its GetW; end must follow (wait may come first).
type async[T any] struct {
	res  chan T // buffered: the goroutine never blocks on it
	stop context.CancelFunc
	got  T
	done bool // got is the answer
}

func goRead[T any](ctx context.Context, read func(context.Context) T) *async[T] {
	ctx, stop := context.WithCancel(ctx)
	r := &async[T]{res: make(chan T, 1), stop: stop}
	go func() { r.res <- read(ctx) }()
	return r
}

// wait returns the answer.
func (r *async[T]) wait() T {
	if !r.done {
		r.got, r.done = <-r.res, true
		r.stop()
	}
	return r.got
}

// end gives up the answer; no goroutine of the read is left after it.
func (r *async[T]) end() {
	r.stop()
	r.wait()
}

// ownStat is the answer of readOwn.
type ownStat struct {
	found bool
	st    *zk.Stat
	err   error
}

// readOwn reads our own node p.
func readOwn(ctx context.Context, ep *conn.Epoch, p string) *async[ownStat] {
	return goRead(ctx, func(ctx context.Context) ownStat {
		found, st, err := connlink.Of(ep).Exists(ctx, p)
		return ownStat{found: found, st: st, err: err}
	})
}

// sealed is the answer of readSeal: czxid names the node read (one
// created again under the same name is another), ok whether its ACL, never
// changed, gives WRITE and ADMIN to one digest identity alone.
type sealed struct {
	czxid int64
	ok    bool
}

// readSeal reads the ACL of node p, which await watches.
func readSeal(ctx context.Context, ep *conn.Epoch, p string) *async[sealed] {
	return goRead(ctx, func(ctx context.Context) sealed {
		acl, st, err := connlink.Of(ep).GetACL(ctx, p)
		if err != nil {
			return sealed{}
		}
		return sealed{czxid: st.Czxid, ok: st.Aversion == 0 && soleWriter(acl)}
	})
}

// soleWriter reports whether every entry of acl that gives WRITE or ADMIN
// names one digest identity (a sealed node's ACL: Queue.NodeACL).
func soleWriter(acl []zk.ACL) bool {
	var who *zk.ACL
	for i, e := range acl {
		if e.Perms&(zk.PermWrite|zk.PermAdmin) == 0 {
			continue
		}
		if e.Scheme != "digest" || who != nil && who.ID != e.ID {
			return false
		}
		who = &acl[i]
	}
	return who != nil
}
