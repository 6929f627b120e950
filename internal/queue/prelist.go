package queue

import (
	"context"

	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
)

// prelisting is the listing sent right behind our create, without waiting
// for its answer (docs/design.md, "One-commit acquire"). Owned by the
// attempt's goroutine; its own only sends the request.
type prelisting struct {
	stop   chan struct{} // closed by the attempt when it no longer waits for the create's write
	cancel context.CancelFunc
	res    chan listed // buffered: the goroutine never blocks on it
}

type listed struct {
	cs   []locknode.Contender // shared: see listings
	err  error
	sent bool // a listing was sent
}

// prelist starts the listing once the epoch's next create request is
// written (ours, unless another went first). Call it right before
// a.create, and end it with behind or drop.
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

// behind takes the listing as the first if it shows our node (then it was
// answered after our create); otherwise it lists again.
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
