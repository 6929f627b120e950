package queue

import (
	"context"

	"github.com/zkrecipes/zkrecipes/internal/connlink"
)

// prelisting is the listing of the lock's children sent right behind our
// create, without waiting for the create's answer: ZooKeeper answers a
// session's requests in order, so the listing's answer follows the
// create's, and an uncontended acquire costs one round trip (the create's
// commit) instead of two. Owned by the attempt's goroutine; its own
// goroutine only sends the request and puts the answer into res.
type prelisting struct {
	stop   chan struct{} // closed by the attempt when it no longer waits for the create's write
	cancel context.CancelFunc
	res    chan listed // buffered: the goroutine never blocks on it
}

type listed struct {
	cs   []Contender // shared: see listings
	err  error
	sent bool // a listing was sent
}

// prelist starts the listing: its goroutine waits until the next create
// request of our epoch's connection is written (ours, unless another
// goroutine's create went first: it is sent right after this call), then
// joins the queue's next shared listing (listings). It must be called
// right before a.create, and ended with behind (or drop).
func (a *attempt) prelist(ctx context.Context) *prelisting {
	written := connlink.Of(a.ep).CreateWritten()
	lctx, cancel := context.WithCancel(ctx)
	p := &prelisting{stop: make(chan struct{}), cancel: cancel, res: make(chan listed, 1)}
	go func() {
		select {
		case <-written:
		case <-p.stop:
			select {
			case <-written: // both ready: the create is on the wire
			default:
				p.res <- listed{}
				return
			}
		case <-lctx.Done():
			p.res <- listed{}
			return
		}
		cs, err := a.ls.list(lctx, a.ep)
		p.res <- listed{cs: cs, err: err, sent: true}
	}()
	return p
}

// drop abandons the listing: its request, if in flight, is cancelled.
func (p *prelisting) drop() {
	close(p.stop)
	p.cancel()
}

// behind takes the listing as the attempt's first listing if it shows our
// node (then it was answered after our create, and it is as good as a
// listing sent after the create's answer); otherwise (sent before our
// create, failed, never sent) it lists again.
func (a *attempt) behind(ctx context.Context, p *prelisting) error {
	close(p.stop)
	defer p.cancel()
	r := <-p.res
	if r.sent && r.err == nil && index(r.cs, a.node) >= 0 {
		a.listed(r.cs)
		return a.ghosts(ctx)
	}
	return a.list(ctx)
}
