package conn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/metrics"
)

// The epoch's operations run on its own connection, fail with
// ErrEpochEnded once it ended, and return when ctx ends. Paths are
// absolute, validated and namespaced both ways; server errors match
// go-zookeeper's sentinels.

// get reads a node's data. Retried on connection loss.
func (e *Epoch) get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	r, err := call(ctx, e, metrics.OpGet, path, true, func(zc *zk.Conn, p string) (res3[[]byte, *zk.Stat, struct{}], error) {
		data, st, err := zc.Get(p)
		return res3[[]byte, *zk.Stat, struct{}]{data, st, struct{}{}}, err
	})
	return r.a, r.b, err
}

// getW reads a node's data and sets a data watch; its channel gets one
// event (change, deletion, or the epoch's end), then closes. Retried.
func (e *Epoch) getW(ctx context.Context, path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	r, ch, err := watchCall(ctx, e, metrics.OpGetW, path, kindData, func(zc *zk.Conn, p string) (res3[[]byte, *zk.Stat, struct{}], <-chan zk.Event, error) {
		data, st, ch, err := zc.GetW(p)
		return res3[[]byte, *zk.Stat, struct{}]{data, st, struct{}{}}, ch, err
	})
	return r.a, r.b, ch, err
}

// getACL reads a node's ACL and stat (connlink.Epoch.GetACL). Retried.
func (e *Epoch) getACL(ctx context.Context, path string) ([]zk.ACL, *zk.Stat, error) {
	r, err := call(ctx, e, metrics.OpGetACL, path, true, func(zc *zk.Conn, p string) (res3[[]zk.ACL, *zk.Stat, struct{}], error) {
		acl, st, err := zc.GetACL(p)
		return res3[[]zk.ACL, *zk.Stat, struct{}]{acl, st, struct{}{}}, err
	})
	return r.a, r.b, err
}

// setACL sets a node's ACL (connlink.Epoch.SetACL). Retried.
func (e *Epoch) setACL(ctx context.Context, path string, acl []zk.ACL, version int32) (*zk.Stat, error) {
	return call(ctx, e, metrics.OpSetACL, path, true, func(zc *zk.Conn, p string) (*zk.Stat, error) {
		return zc.SetACL(p, acl, version)
	})
}

// children lists a node's children (names, not paths). Retried.
func (e *Epoch) children(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	r, err := call(ctx, e, metrics.OpChildren, path, true, func(zc *zk.Conn, p string) (res3[[]string, *zk.Stat, struct{}], error) {
		names, st, err := zc.Children(p)
		return res3[[]string, *zk.Stat, struct{}]{names, st, struct{}{}}, err
	})
	return r.a, r.b, err
}

// childrenW is children with a child watch, as getW. Counted as OpChildren.
func (e *Epoch) childrenW(ctx context.Context, path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	r, ch, err := watchCall(ctx, e, metrics.OpChildren, path, kindChild, func(zc *zk.Conn, p string) (res3[[]string, *zk.Stat, struct{}], <-chan zk.Event, error) {
		names, st, ch, err := zc.ChildrenW(p)
		return res3[[]string, *zk.Stat, struct{}]{names, st, struct{}{}}, ch, err
	})
	return r.a, r.b, ch, err
}

// exists tells whether a node exists. Retried.
func (e *Epoch) exists(ctx context.Context, path string) (bool, *zk.Stat, error) {
	r, err := call(ctx, e, metrics.OpExists, path, true, func(zc *zk.Conn, p string) (res3[bool, *zk.Stat, struct{}], error) {
		ok, st, err := zc.Exists(p)
		return res3[bool, *zk.Stat, struct{}]{ok, st, struct{}{}}, err
	})
	return r.a, r.b, err
}

// existsW is exists with a watch (created, changed or deleted). Retried.
func (e *Epoch) existsW(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	r, ch, err := watchCall(ctx, e, metrics.OpExists, path, kindData, func(zc *zk.Conn, p string) (res3[bool, *zk.Stat, struct{}], <-chan zk.Event, error) {
		ok, st, ch, err := zc.ExistsW(p)
		return res3[bool, *zk.Stat, struct{}]{ok, st, struct{}{}}, ch, err
	})
	return r.a, r.b, ch, err
}

// set writes a node's data if its version matches (-1: any). Retried only
// with a real version: an unversioned retry could overwrite a later set.
func (e *Epoch) set(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error) {
	return call(ctx, e, metrics.OpSet, path, version >= 0, func(zc *zk.Conn, p string) (*zk.Stat, error) {
		return zc.Set(p, data, version)
	})
}

// delete deletes a node if its version matches (-1: any). Retried, so
// zk.ErrNoNode may mean the first attempt worked. Safe only for paths no
// one re-creates (sequential nodes): elsewhere a retry could delete the new
// node; use a one-op multi (never retried) and read before trying again.
func (e *Epoch) delete(ctx context.Context, path string, version int32) error {
	_, err := call(ctx, e, metrics.OpDelete, path, true, func(zc *zk.Conn, p string) (struct{}, error) {
		return struct{}{}, zc.Delete(p, version)
	})
	return err
}

// create creates a node and returns its path. Non-sequential creates are
// retried (zk.ErrNodeExists may then be ours); sequential ones are not
// (ErrConnectionLoss: the node may exist).
func (e *Epoch) create(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	retry := flags&zk.FlagSequence == 0
	created, err := call(ctx, e, metrics.OpCreate, path, retry, func(zc *zk.Conn, p string) (string, error) {
		if flags == zk.FlagContainer {
			return zc.CreateContainer(p, data, flags, acl)
		}
		return zc.Create(p, data, flags, acl)
	})
	return e.s.strip(created), err
}

// createParents creates path's missing ancestors (and the namespace's) as
// containers. Existing ones are fine, also where we may not create: the
// server checks permission first (zk.ErrNoAuth, not zk.ErrNodeExists).
func (e *Epoch) createParents(ctx context.Context, path string) error {
	if err := zkpath.Validate(path); err != nil {
		return err
	}
	full := e.s.cfg.namespace + path
	for i := 1; i < len(full); i++ {
		if full[i] != '/' {
			continue
		}
		_, err := callAbs(ctx, e, metrics.OpCreate, full[:i], true, func(zc *zk.Conn, p string) (string, error) {
			return zc.CreateContainer(p, nil, zk.FlagContainer, e.s.cfg.acl)
		})
		if errors.Is(err, zk.ErrNoAuth) {
			ok, xerr := callAbs(ctx, e, metrics.OpExists, full[:i], true, func(zc *zk.Conn, p string) (bool, error) {
				ok, _, err := zc.Exists(p) // needs no permission
				return ok, err
			})
			if xerr == nil && ok {
				err = nil
			}
		}
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// multi runs ops atomically, never retried (ErrConnectionLoss: maybe
// applied). A refusal (nothing applied) is an *opError naming the op.
func (e *Epoch) multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	abs := make([]any, len(ops))
	for i, op := range ops {
		var err error
		if abs[i], err = e.s.absOp(op); err != nil {
			return nil, err
		}
	}
	res, err := callAbs(ctx, e, metrics.OpMulti, describeOps(ops), false, func(zc *zk.Conn, _ string) ([]zk.MultiResponse, error) {
		return zc.Multi(abs...)
	})
	for i := range res {
		res[i].String = e.s.strip(res[i].String)
	}
	if oe := failedOp(ops, res, err); oe != nil {
		return res, oe
	}
	return res, err
}

// sync makes the server this epoch talks to catch up with the leader.
func (e *Epoch) sync(ctx context.Context, path string) error {
	_, err := call(ctx, e, metrics.OpSync, path, true, func(zc *zk.Conn, p string) (string, error) {
		return zc.Sync(p)
	})
	return err
}

// res3 carries up to three results of a go-zookeeper call.
type res3[A, B, C any] struct {
	a A
	b B
	c C
}

// call validates and namespaces path, then runs f under callAbs.
func call[T any](ctx context.Context, e *Epoch, op, path string, retry bool, f func(*zk.Conn, string) (T, error)) (T, error) {
	if err := zkpath.Validate(path); err != nil {
		var zero T
		return zero, fmt.Errorf("conn: %s: %w", op, err)
	}
	return callAbs(ctx, e, op, e.s.abs(path), retry, f)
}

// callAbs runs f on the epoch's connection, retrying (if retry) on loss.
func callAbs[T any](ctx context.Context, e *Epoch, op, full string, retry bool, f func(*zk.Conn, string) (T, error)) (T, error) {
	var zero T
	policy := e.s.cfg.retry
	for attempt := 1; ; attempt++ {
		if err := e.Err(); err != nil {
			return zero, fmt.Errorf("conn: %s %s: %w", op, full, err)
		}
		if err := ctx.Err(); err != nil {
			return zero, fmt.Errorf("conn: %s %s: %w", op, full, err)
		}
		e.s.stats.count(op)
		var sent time.Time
		timed := e.s.cfg.hooks.Request != nil
		if timed {
			sent = time.Now()
		}
		v, err := await(ctx, e, func() (T, error) { return f(e.zc, full) })
		if timed {
			e.s.reportRequest(metrics.Request{Op: op, Duration: time.Since(sent), Err: err})
		}
		if err == nil {
			return v, nil
		}
		if errors.Is(err, zk.ErrSessionExpired) && e.ctx.Err() == nil {
			// The server confirms expiry: end the epoch first, so that
			// the error matches ErrEpochEnded.
			e.s.inbox.put(message{expired: e})
			t := time.NewTimer(e.timeout) // bound: the run loop ends it at once
			defer t.Stop()
			select {
			case <-e.ctx.Done():
				return v, fmt.Errorf("conn: %s %s: %w: %w", op, full, err, e.Err())
			case <-ctx.Done():
			case <-e.s.closing:
			case <-t.C:
			}
			return v, fmt.Errorf("conn: %s %s: %w", op, full, err)
		}
		if !isConnectionLoss(err) || errors.Is(err, ErrEpochEnded) || ctx.Err() != nil {
			return v, fmt.Errorf("conn: %s %s: %w", op, full, err)
		}
		if e.Err() != nil {
			return zero, fmt.Errorf("conn: %s %s: %w: %w", op, full, ErrConnectionLoss, e.Err())
		}
		if !retry || policy.MaxAttempts > 0 && attempt >= policy.MaxAttempts {
			return zero, fmt.Errorf("conn: %s %s: %w: %w", op, full, ErrConnectionLoss, err)
		}
		e.s.log.Sugar().Debugf("retrying %s %s after connection loss (attempt %d)", op, full, attempt)
		if err := sleep(ctx, e.ctx, policy.delay(attempt)); err != nil {
			return zero, fmt.Errorf("conn: %s %s: %w", op, full, err)
		}
	}
}

// outcome is one finished go-zookeeper call.
type outcome[T any] struct {
	v   T
	err error
}

// await runs f and stops waiting when ctx or the epoch ends. Results pass
// only through the channel, so a late f touches nothing of the caller's;
// an epoch's end in flight matches ErrEpochEnded and ErrConnectionLoss.
func await[T any](ctx context.Context, e *Epoch, f func() (T, error)) (T, error) {
	res := make(chan outcome[T], 1) // buffered: f may finish after we stopped waiting
	go func() {
		v, err := f()
		res <- outcome[T]{v, err}
	}()
	var zero T
	select {
	case r := <-res:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-e.ctx.Done():
		return zero, fmt.Errorf("%w: %w", ErrConnectionLoss, e.Err())
	}
}

// sleep waits d unless ctx or the epoch ends first.
func sleep(ctx, epoch context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-epoch.Done():
		return fmt.Errorf("%w: %w", ErrEpochEnded, context.Cause(epoch))
	}
}

// abs adds the namespace to a validated path.
func (s *Session) abs(p string) string {
	if s.cfg.namespace == "" {
		return p
	}
	if p == "/" {
		return s.cfg.namespace
	}
	return s.cfg.namespace + p
}

// strip removes the namespace from a path the server returned.
func (s *Session) strip(p string) string {
	if s.cfg.namespace == "" || p == "" {
		return p
	}
	rest := strings.TrimPrefix(p, s.cfg.namespace)
	if rest == "" {
		return "/"
	}
	return rest
}

// absOp copies a multi op with its path validated and namespaced.
func (s *Session) absOp(op any) (any, error) {
	check := func(p string) (string, error) {
		if err := zkpath.Validate(p); err != nil {
			return "", fmt.Errorf("conn: multi: %w", err)
		}
		return s.abs(p), nil
	}
	var err error
	switch o := op.(type) {
	case *zk.CreateRequest:
		c := *o
		c.Path, err = check(o.Path)
		return &c, err
	case *zk.DeleteRequest:
		c := *o
		c.Path, err = check(o.Path)
		return &c, err
	case *zk.SetDataRequest:
		c := *o
		c.Path, err = check(o.Path)
		return &c, err
	case *zk.CheckVersionRequest:
		c := *o
		c.Path, err = check(o.Path)
		return &c, err
	}
	return nil, fmt.Errorf("multi: unsupported op %T: %w", op, ErrInvalidArgument)
}
