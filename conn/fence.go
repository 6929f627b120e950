package conn

import (
	"cmp"
	"context"
	"fmt"
	"time"
)

// Fence is a grant's fencing token, growing strictly with every grant of a
// lock (in-process handoffs and rwlock downgrades included): Zxid is the
// czxid of the node the grant stands on, Pass numbers the grants on that
// node (0 first). A resource keeps the greatest Fence seen (Compare) and
// refuses any below it. Zxid alone suffices only where Pass is always 0.
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

// Fence returns the grant's fencing token (the czxid is read once, then
// cached); ErrLeaseLost once the lease ended or its node is not ours.
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
	v := &Lease{ep: l.ep, path: l.path, parent: l, pass: pass, lost: make(chan struct{}), revoked: make(chan struct{}),
		granted: time.Now(), recipe: l.recipe, lock: l.lock}
	linkLease(v)
	go v.watchParent()
	return v
}

// watchParent closes the view's Lost when its node's lease is lost, and its
// Revoked on a revoke request to the node while the view holds, not after.
func (l *Lease) watchParent() {
	revoked := l.parent.revoked
	for {
		select {
		case <-l.parent.lostChan():
			l.closeLost(l.parent.Err())
			return
		case <-l.lost:
			return
		case <-revoked:
			revoked = nil
			if !l.isLost() {
				close(l.revoked)
			}
		}
	}
}
