package conn

import (
	"context"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/metrics"
)

// What the recipes reach beyond the public API (internal/connlink): Session,
// Epoch and Lease each embed a link to a view of itself implementing it.
type (
	sessionLink = connlink.Link[connlink.Session[*Epoch]]
	epochLink   = connlink.Link[connlink.Epoch[*Lease]]
	leaseLink   = connlink.Link[connlink.Lease[*Lease]]
)

// A view is the value's own pointer converted, so a link costs no
// allocation, only its two words in the value.
type (
	sessionView Session
	epochView   Epoch
	leaseView   Lease
)

func (v *sessionView) Epoch(ctx context.Context) (*Epoch, error) { return (*Session)(v).epoch(ctx) }
func (v *sessionView) CheckWire(ctx context.Context) error       { return (*Session)(v).checkWire(ctx) }

func (v *sessionView) SealedACL() []zk.ACL      { return (*Session)(v).sealedACL() }
func (v *sessionView) Shared() *sync.Map        { return &v.shared }
func (v *sessionView) Closing() <-chan struct{} { return v.closing }
func (v *sessionView) Metrics() *metrics.Hooks  { return &v.cfg.hooks }
func (v *sessionView) Stats() connlink.Stats    { return v.stats.snapshot() }
func (v *sessionView) ACL() []zk.ACL            { return (*Session)(v).acl() }
func (v *sessionView) Ensemble() string         { return (*Session)(v).ensemble() }
func (v *sessionView) FullPath(p string) string { return (*Session)(v).abs(p) }
func (v *sessionView) Logger() *zap.Logger      { return v.log }

func (v *sessionView) FailedOp(err error) (index int, ok bool) { return failedIndex(err) }

func (v *epochView) NewLease(path string, czxid int64) *Lease {
	return (*Epoch)(v).newLease(path, czxid)
}

func (v *epochView) Unwatch(ctx context.Context, ch <-chan zk.Event) error {
	return (*Epoch)(v).unwatch(ctx, ch)
}

func (v *epochView) SessionPassword() []byte        { return append([]byte(nil), v.passwd...) }
func (v *epochView) CreateWritten() <-chan struct{} { return (*Epoch)(v).createWritten() }
func (v *epochView) Context() context.Context       { return v.ctx }

func (v *epochView) GetACL(ctx context.Context, path string) ([]zk.ACL, *zk.Stat, error) {
	return (*Epoch)(v).getACL(ctx, path)
}

func (v *epochView) SetACL(ctx context.Context, path string, acl []zk.ACL, version int32) (*zk.Stat, error) {
	return (*Epoch)(v).setACL(ctx, path, acl, version)
}

func (v *epochView) Timeout() time.Duration { return v.timeout }

func (v *epochView) Get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	return (*Epoch)(v).get(ctx, path)
}

func (v *epochView) GetW(ctx context.Context, path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	return (*Epoch)(v).getW(ctx, path)
}

func (v *epochView) Children(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	return (*Epoch)(v).children(ctx, path)
}

func (v *epochView) ChildrenW(ctx context.Context, path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	return (*Epoch)(v).childrenW(ctx, path)
}

func (v *epochView) Exists(ctx context.Context, path string) (bool, *zk.Stat, error) {
	return (*Epoch)(v).exists(ctx, path)
}

func (v *epochView) ExistsW(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	return (*Epoch)(v).existsW(ctx, path)
}

func (v *epochView) Set(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error) {
	return (*Epoch)(v).set(ctx, path, data, version)
}

func (v *epochView) Delete(ctx context.Context, path string, version int32) error {
	return (*Epoch)(v).delete(ctx, path, version)
}

func (v *epochView) Create(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	return (*Epoch)(v).create(ctx, path, data, flags, acl)
}

func (v *epochView) CreateParents(ctx context.Context, path string) error {
	return (*Epoch)(v).createParents(ctx, path)
}

func (v *epochView) Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	return (*Epoch)(v).multi(ctx, ops...)
}

func (v *epochView) Sync(ctx context.Context, path string) error { return (*Epoch)(v).sync(ctx, path) }

func (v *leaseView) Released()                           { (*Lease)(v).released() }
func (v *leaseView) Local(pass int64) *Lease             { return (*Lease)(v).localView(pass) }
func (v *leaseView) HoldWrites() (done func())           { return (*Lease)(v).holdWrites() }
func (v *leaseView) RevokeSeen() bool                    { return (*Lease)(v).revokeSeen() }
func (v *leaseView) Guard(node string, zxid, pass int64) { (*Lease)(v).guardWith(node, zxid, pass) }
func (v *leaseView) Unguard()                            { (*Lease)(v).unguard() }
func (v *leaseView) CheckOp() *zk.CheckVersionRequest    { return (*Lease)(v).checkOp() }
func (v *leaseView) Label(recipe, lock string) {
	v.recipe, v.lock = recipe, lock
	v.unreported.Store(false)
}
func (v *leaseView) Unreported()       { v.unreported.Store(true) }
func (v *leaseView) Releasing(on bool) { (*Lease)(v).setReleasing(on) }
func (v *leaseView) Gone()             { (*Lease)(v).gone() }

// linkSession, linkEpoch and linkLease set the link of a value just made.
func linkSession(s *Session) {
	s.sessionLink = connlink.NewLink[connlink.Session[*Epoch]]((*sessionView)(s))
}

func linkEpoch(e *Epoch) {
	e.epochLink = connlink.NewLink[connlink.Epoch[*Lease]]((*epochView)(e))
}

func linkLease(l *Lease) {
	l.leaseLink = connlink.NewLink[connlink.Lease[*Lease]]((*leaseView)(l))
}
