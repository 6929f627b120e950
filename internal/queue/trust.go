package queue

import (
	"context"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
)

// sealRead is the read of a watched node's ACL that await sends beside its
// GetW: whether one digest identity alone ever could change the node.
type sealRead struct {
	res   chan sealed
	stop  context.CancelFunc
	known bool // res was received into got
	got   sealed
}

// sealed is a sealRead's answer: czxid names the node read (one created
// again under the same name is another), ok whether its ACL seals it.
type sealed struct {
	czxid int64
	ok    bool
}

// readSeal starts reading node p's ACL; end must follow.
func readSeal(ctx context.Context, ep *conn.Epoch, p string) *sealRead {
	ctx, stop := context.WithCancel(ctx)
	r := &sealRead{res: make(chan sealed, 1), stop: stop}
	go func() {
		acl, st, err := connlink.Of(ep).GetACL(ctx, p)
		if err != nil {
			r.res <- sealed{}
			return
		}
		r.res <- sealed{czxid: st.Czxid, ok: st.Aversion == 0 && soleWriter(acl)}
	}()
	return r
}

// sealed waits for the answer: true when the node created at czxid (whose
// data the caller read) had an ACL never changed that gives WRITE and
// ADMIN to one digest identity alone.
func (r *sealRead) sealed(czxid int64) bool {
	if !r.known {
		r.got, r.known = <-r.res, true
	}
	return r.got.ok && r.got.czxid == czxid
}

// end gives up the answer; no goroutine of the read is left after it.
func (r *sealRead) end() {
	r.stop()
	if !r.known {
		<-r.res
		r.known = true
	}
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
