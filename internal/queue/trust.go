package queue

import (
	"context"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
)

// sealRead is the read of a watched node's ACL that await sends together
// with the read of its data (see await): it tells whether, from its
// creation on, one digest identity alone may change the node.
type sealRead struct {
	res   chan sealed
	stop  context.CancelFunc
	known bool // res was received into got
	got   sealed
}

// sealed is the answer of a sealRead: czxid names the node whose ACL was
// read (a node deleted and created again under the same name is another
// node), and ok tells whether that ACL seals it.
type sealed struct {
	czxid int64
	ok    bool
}

// readSeal starts reading node p's ACL in ep, bounded by ctx; end must be
// called when the caller no longer needs the answer.
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

// sealed waits for the answer (bounded by the ctx readSeal was given):
// true when the node created at zxid czxid (the one whose data the caller
// read) had an ACL never changed (ACL version 0) that gives WRITE and
// ADMIN to one digest identity and to nothing else. False too when the
// ACL could not be read, or was another node's.
func (r *sealRead) sealed(czxid int64) bool {
	if !r.known {
		r.got, r.known = <-r.res, true
	}
	return r.got.ok && r.got.czxid == czxid
}

// end gives up the answer if it is not in yet; no goroutine of the read
// is left once end returns.
func (r *sealRead) end() {
	r.stop()
	if !r.known {
		<-r.res
		r.known = true
	}
}

// soleWriter reports whether acl lets exactly one identity change a node's
// data or its ACL, a digest identity: every entry that gives WRITE or
// ADMIN names it (a sealed node's ACL: Queue.NodeACL).
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
