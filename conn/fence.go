package conn

import (
	"cmp"
	"context"
	"fmt"
	"time"
)

// Fence is the fencing token of a grant (Lease.Fence): it grows strictly
// with every grant of a lock, in every configuration, grants passed
// between goroutines of one process without ZooKeeper (the recipes'
// in-process handoff, WithLocalHandoff) included. Zxid is the lock node's
// czxid; Pass numbers the grants made on that node: 0 for the grant that
// created it, 1, 2, ... for each local handoff on it. A read lock of
// package rwlock taken by the goroutine that holds the write lock (a
// downgrade) is a grant on the write node too: the write node's czxid, and
// Pass 1, 2, ... for each downgrade under that write grant, so it sorts
// after the write grant and before the grant of any node queued after the
// write node. A later grant has a greater Zxid, or the same Zxid and a
// greater Pass: compare two with Compare (Zxid first, then Pass). A
// resource that fences writes keeps the greatest Fence it has seen and
// refuses any below it (an equal one is the same grant writing again).
//
// Zxid alone is not a fencing token: the grants of one node share it. It
// is one only where no grant is ever made on a node after the one that
// created it (Pass always 0: no WithLocalHandoff on the lock, in any
// process, and no rwlock downgrade), as for a store that keeps a single
// integer and for Curator's InterProcessMutex, whose holders fence with
// the czxid of their lock node.
type Fence struct {
	Zxid int64
	Pass int64
}

// Compare returns -1 if f was granted before g, 0 if they are the same
// grant, +1 if after.
func (f Fence) Compare(g Fence) int {
	if c := cmp.Compare(f.Zxid, g.Zxid); c != 0 {
		return c
	}
	return cmp.Compare(f.Pass, g.Pass)
}

// String is "zxid.pass", in hexadecimal as ZooKeeper prints zxids.
func (f Fence) String() string { return fmt.Sprintf("0x%x.%d", f.Zxid, f.Pass) }

// Fence is the grant's fencing token (see Fence): the czxid of our lock
// node, known from the grant or read from the server on first use (one
// request, then cached), or, for a grant that stands on another node (an
// rwlock downgrade), that node's czxid, fixed when it is granted; and the
// grant's pass on the node. It fails with ErrLeaseLost once the lease is
// released or lost, or when the read finds the node gone or not ours
// (Lost then closes): a node at our path that a session other than ours
// owns, or with another czxid than the one we know, was created after
// ours was deleted, and its czxid is not our token. It fails with the
// read's error if the read fails.
func (l *Lease) Fence(ctx context.Context) (Fence, error) {
	if err := l.Err(); err != nil {
		return Fence{}, err
	}
	z, err := l.zxid(ctx)
	if err != nil {
		return Fence{}, err
	}
	return Fence{Zxid: z, Pass: l.pass}, nil
}

// localView is a local grant number pass on l's node (connlink.Lease.Local):
// a lease of its own over the same node, lost when released or when l is.
func (l *Lease) localView(pass int64) *Lease {
	l.shared.Store(true)
	v := &Lease{ep: l.ep, path: l.path, parent: l, pass: pass, lost: make(chan struct{}), revoked: l.revoked,
		granted: time.Now(), recipe: l.recipe, lock: l.lock}
	linkLease(v)
	go v.watchParent()
	return v
}

// watchParent closes the view's Lost when its node's lease is lost; it
// ends when either is closed.
func (l *Lease) watchParent() {
	select {
	case <-l.parent.lostChan():
		l.closeLost(l.parent.Err())
	case <-l.lost:
	}
}
