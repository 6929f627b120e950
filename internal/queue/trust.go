package queue

import (
	"context"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/connhook"
)

// sealRead is the read of a watched node's ACL that await sends together
// with the read of its data (see await): it tells whether, from its
// creation on, one digest identity alone may change the node.
type sealRead struct {
	res   chan bool
	stop  context.CancelFunc
	known bool // res was received into ok
	ok    bool
}

// readSeal starts reading node p's ACL in ep, bounded by ctx; end must be
// called when the caller no longer needs the answer.
func readSeal(ctx context.Context, ep any, p string) *sealRead {
	ctx, stop := context.WithCancel(ctx)
	r := &sealRead{res: make(chan bool, 1), stop: stop}
	go func() {
		acl, st, err := connhook.GetACL(ctx, ep, p)
		r.res <- err == nil && st.Aversion == 0 && soleWriter(acl)
	}()
	return r
}

// sealed waits for the answer (bounded by the ctx readSeal was given):
// true when the node's ACL had never been changed (ACL version 0) and it
// gives WRITE and ADMIN to one digest identity and to nothing else. False
// too when the ACL could not be read.
func (r *sealRead) sealed() bool {
	if !r.known {
		r.ok, r.known = <-r.res, true
	}
	return r.ok
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
