package conn

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/metrics"
)

// Session, Epoch and Lease each embed a link (internal/connlink) to a view
// of itself: what the recipes reach beyond the public API.
type (
	sessionLink = connlink.Link[connlink.Session[*Epoch]]
	epochLink   = connlink.Link[connlink.Epoch[*Lease]]
	leaseLink   = connlink.Link[connlink.Lease[*Lease]]
)

// A view is the value's own pointer converted: a link allocates nothing.
type (
	sessionView Session
	epochView   Epoch
	leaseView   Lease
)

func (v *sessionView) Epoch(ctx context.Context) (*Epoch, error) { return (*Session)(v).epoch(ctx) }

func (v *sessionView) SealedACL() []zk.ACL      { return append([]zk.ACL(nil), v.sealed...) }
func (v *sessionView) Shared() *sync.Map        { return &v.shared }
func (v *sessionView) Closing() <-chan struct{} { return v.closing }
func (v *sessionView) Metrics() *metrics.Hooks  { return &v.cfg.hooks }
func (v *sessionView) Stats() connlink.Stats    { return v.stats.snapshot() }
func (v *sessionView) ACL() []zk.ACL            { return append([]zk.ACL(nil), v.cfg.acl...) }
func (v *sessionView) FullPath(p string) string { return (*Session)(v).abs(p) }
func (v *sessionView) Logger() *zap.Logger      { return v.log }

// Ensemble is the Connect addresses, sorted, deduplicated, joined with ",".
func (v *sessionView) Ensemble() string {
	srv := slices.Clone(v.servers)
	slices.Sort(srv)
	return strings.Join(slices.Compact(srv), ",")
}

func (v *sessionView) FailedOp(err error) (index int, ok bool) {
	var oe *opError
	if errors.As(err, &oe) {
		return oe.index, true
	}
	return 0, false
}

func (v *epochView) SessionPassword() []byte  { return append([]byte(nil), v.passwd...) }
func (v *epochView) Context() context.Context { return v.ctx }
func (v *epochView) Timeout() time.Duration   { return v.timeout }

func (v *leaseView) Released()                               { (*Lease)(v).released() }
func (v *leaseView) Local(pass int64) *Lease                 { return (*Lease)(v).localView(pass) }
func (v *leaseView) RevokeSeen() bool                        { return closed(v.revoked) }
func (v *leaseView) CheckOp() *zk.CheckVersionRequest        { return (*Lease)(v).checkOp() }
func (v *leaseView) Unreported()                             { v.unreported.Store(true) }
func (v *leaseView) Releasing(on bool)                       { (*Lease)(v).setReleasing(on) }
func (v *leaseView) Gone()                                   { (*Lease)(v).gone() }
func (v *leaseView) Zxid(ctx context.Context) (int64, error) { return (*Lease)(v).zxid(ctx, false) }

func (v *leaseView) Label(recipe, lock string) {
	v.recipe, v.lock = recipe, lock
	v.unreported.Store(false)
}

func (v *leaseView) HoldWrites(wait bool) (done func()) {
	if wait {
		v.writes.Lock()
	} else if !v.writes.TryLock() {
		return nil
	}
	return v.writes.Unlock
}
