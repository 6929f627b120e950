package conn

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/metrics"
)

// view is the epoch with the node operations the recipes reach (connlink.Epoch).
func (e *Epoch) view() *epochView { return (*epochView)(e) }

func (v *epochView) Get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	return withStat(ctx, (*Epoch)(v), metrics.OpGet, path, (*zk.Conn).Get)
}

func (v *epochView) GetW(ctx context.Context, path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	return watchCall(ctx, (*Epoch)(v), metrics.OpGetW, path, kindData, (*zk.Conn).GetW)
}

func (v *epochView) GetACL(ctx context.Context, path string) ([]zk.ACL, *zk.Stat, error) {
	return withStat(ctx, (*Epoch)(v), metrics.OpGetACL, path, (*zk.Conn).GetACL)
}

func (v *epochView) SetACL(ctx context.Context, path string, acl []zk.ACL, version int32) (*zk.Stat, error) {
	return call(ctx, (*Epoch)(v), metrics.OpSetACL, path, true, func(zc *zk.Conn, p string) (*zk.Stat, error) {
		return zc.SetACL(p, acl, version)
	})
}

func (v *epochView) Children(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	return withStat(ctx, (*Epoch)(v), metrics.OpChildren, path, (*zk.Conn).Children)
}

func (v *epochView) ChildrenW(ctx context.Context, path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	return watchCall(ctx, (*Epoch)(v), metrics.OpChildren, path, kindChild, (*zk.Conn).ChildrenW)
}

func (v *epochView) Exists(ctx context.Context, path string) (bool, *zk.Stat, error) {
	return withStat(ctx, (*Epoch)(v), metrics.OpExists, path, (*zk.Conn).Exists)
}

func (v *epochView) ExistsW(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	return watchCall(ctx, (*Epoch)(v), metrics.OpExists, path, kindData, (*zk.Conn).ExistsW)
}

// Set is retried only with a real version: else it could overwrite a later set.
func (v *epochView) Set(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error) {
	return call(ctx, (*Epoch)(v), metrics.OpSet, path, version >= 0, func(zc *zk.Conn, p string) (*zk.Stat, error) {
		return zc.Set(p, data, version)
	})
}

func (v *epochView) Delete(ctx context.Context, path string, version int32) error {
	_, err := call(ctx, (*Epoch)(v), metrics.OpDelete, path, true, func(zc *zk.Conn, p string) (struct{}, error) {
		return struct{}{}, zc.Delete(p, version)
	})
	return err
}

func (v *epochView) Create(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	retry := flags&zk.FlagSequence == 0
	created, err := call(ctx, (*Epoch)(v), metrics.OpCreate, path, retry, func(zc *zk.Conn, p string) (string, error) {
		if flags == zk.FlagContainer {
			return zc.CreateContainer(p, data, flags, acl)
		}
		return zc.Create(p, data, flags, acl)
	})
	return v.s.strip(created), err
}

// CreateParents: existing ancestors are fine, also where we may not create
// (the server checks permission first: zk.ErrNoAuth, not zk.ErrNodeExists).
func (v *epochView) CreateParents(ctx context.Context, path string) error {
	if err := zkpath.Validate(path); err != nil {
		return err
	}
	e := (*Epoch)(v)
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

// Multi is never retried; a refusal (nothing applied) is an *opError.
func (v *epochView) Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	abs := make([]any, len(ops))
	for i, op := range ops {
		_, c, p := opCopy(op)
		if c == nil {
			return nil, fmt.Errorf("multi: unsupported op %T: %w", op, ErrInvalidArgument)
		}
		if err := zkpath.Validate(*p); err != nil {
			return nil, fmt.Errorf("conn: multi: %w", err)
		}
		*p, abs[i] = v.s.abs(*p), c
	}
	res, err := callAbs(ctx, (*Epoch)(v), metrics.OpMulti, describeOps(ops), false, func(zc *zk.Conn, _ string) ([]zk.MultiResponse, error) {
		return zc.Multi(abs...)
	})
	for i := range res {
		res[i].String = v.s.strip(res[i].String)
	}
	if oe := failedOp(ops, res, err); oe != nil {
		return res, oe
	}
	return res, err
}

func (v *epochView) Sync(ctx context.Context, path string) error {
	_, err := call(ctx, (*Epoch)(v), metrics.OpSync, path, true, (*zk.Conn).Sync)
	return err
}

type result[T any] struct {
	v   T
	st  *zk.Stat
	ch  <-chan zk.Event
	err error // through await
}

// withStat is call, retried, for a go-zookeeper call that returns a stat too.
func withStat[T any](ctx context.Context, e epochSource, op, path string, f func(*zk.Conn, string) (T, *zk.Stat, error)) (T, *zk.Stat, error) {
	r, err := call(ctx, e, op, path, true, func(zc *zk.Conn, p string) (result[T], error) {
		v, st, err := f(zc, p)
		return result[T]{v: v, st: st}, err
	})
	return r.v, r.st, err
}

// epochSource is a Session (its live epoch, waited for) or an Epoch (itself).
type epochSource interface {
	epoch(ctx context.Context) (*Epoch, error)
}

func (e *Epoch) epoch(context.Context) (*Epoch, error) { return e, nil }

// call validates and namespaces path, then runs f under callAbs.
func call[T any](ctx context.Context, src epochSource, op, path string, retry bool, f func(*zk.Conn, string) (T, error)) (T, error) {
	var zero T
	if err := zkpath.Validate(path); err != nil {
		return zero, fmt.Errorf("conn: %s: %w", op, err)
	}
	e, err := src.epoch(ctx)
	if err != nil {
		return zero, err
	}
	return callAbs(ctx, e, op, e.s.abs(path), retry, f)
}

// callAbs runs f on the epoch's connection, retrying (if retry) on loss.
func callAbs[T any](ctx context.Context, e *Epoch, op, full string, retry bool, f func(*zk.Conn, string) (T, error)) (T, error) {
	var zero T
	policy := e.s.cfg.retry
	loss := lossOf(op)
	lost := false // a try's answer was lost: a retry may meet its work (ErrConnectionLoss)
	fail := func(v T, err error) (T, error) {
		if lost && (op == metrics.OpCreate && errors.Is(err, zk.ErrNodeExists) ||
			op == metrics.OpSet && errors.Is(err, zk.ErrBadVersion) || op == metrics.OpDelete && errors.Is(err, zk.ErrNoNode)) {
			err = fmt.Errorf("%w: %w", ErrConnectionLoss, err)
		}
		return v, fmt.Errorf("conn: %s %s: %w", op, e.s.strip(full), err) // the caller's path
	}
	for attempt := 1; ; attempt++ {
		if err := cmp.Or(e.Err(), ctx.Err()); err != nil {
			return fail(zero, err)
		}
		e.s.stats.count(op)
		sent := time.Now()
		v, err := await(ctx, e, loss, func() (T, error) { return f(e.zc, full) })
		if h := e.s.cfg.hooks.Request; h != nil {
			h(metrics.Request{Op: op, Duration: time.Since(sent), Err: err})
		}
		switch {
		case err == nil:
			return v, nil
		case errors.Is(err, zk.ErrSessionExpired) && e.ctx.Err() == nil:
			// Confirmed expiry: end the epoch first, so the error matches ErrEpochEnded.
			e.s.inbox.put(message{lost: e, cause: ErrSessionExpired})
			t := time.NewTimer(e.timeout) // bound: the run loop ends it at once
			defer t.Stop()
			select {
			case <-e.ctx.Done():
				return fail(v, fmt.Errorf("%w: %w", err, e.Err()))
			case <-ctx.Done():
			case <-e.s.closing:
			case <-t.C:
			}
			return fail(v, err)
		case !isConnectionLoss(err) || errors.Is(err, ErrEpochEnded) || ctx.Err() != nil:
			return fail(v, err)
		case e.Err() != nil:
			return fail(zero, fmt.Errorf("%w: %w", loss, e.Err()))
		case !retry || policy.MaxAttempts > 0 && attempt >= policy.MaxAttempts:
			return fail(zero, fmt.Errorf("%w: %w", loss, err))
		}
		lost = true
		e.s.log.Sugar().Debugf("retrying %s %s after connection loss (attempt %d)", op, full, attempt)
		d := backoff(policy.BaseDelay, policy.MaxDelay, attempt)
		t := time.NewTimer(time.Duration(rand.Int64N(int64(d)) + 1)) // full jitter
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fail(zero, ctx.Err())
		case <-e.ctx.Done():
			t.Stop()
			return fail(zero, fmt.Errorf("%w: %w", ErrEpochEnded, context.Cause(e.ctx)))
		}
	}
}

// lostRead is ErrConnectionLoss for a read, which applies nothing.
type lostRead struct{}

func (lostRead) Error() string {
	return "conn: connection lost before the answer (a read: nothing was changed)"
}
func (lostRead) Is(target error) bool { return target == ErrConnectionLoss }

// lossOf is what a lost answer to op matches: ErrConnectionLoss, saying
// for a write that it may have been applied.
func lossOf(op string) error {
	switch op {
	case metrics.OpGet, metrics.OpGetW, metrics.OpChildren, metrics.OpExists, metrics.OpGetACL, metrics.OpSync:
		return lostRead{}
	}
	return ErrConnectionLoss
}

// await runs f and stops waiting when ctx or the epoch ends (then failing
// with loss). Results pass only through the channel, so a late f touches
// nothing of the caller's. At most maxInFlight run at once per epoch, so
// that the quorum timer's sync never waits behind more than that many of
// the session's own requests (docs/design.md, "The quorum timer's numbers").
func await[T any](ctx context.Context, e *Epoch, loss error, f func() (T, error)) (T, error) {
	var zero T
	select {
	case e.inFlight <- struct{}{}:
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-e.ctx.Done():
		return zero, fmt.Errorf("%w: %w", loss, e.Err())
	}
	res := make(chan result[T], 1) // buffered: f may finish after we stopped waiting
	go func() {
		v, err := f()
		<-e.inFlight
		res <- result[T]{v: v, err: err}
	}()
	select {
	case r := <-res:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-e.ctx.Done():
		return zero, fmt.Errorf("%w: %w", loss, e.Err())
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

type retryPolicy struct {
	BaseDelay, MaxDelay time.Duration
	MaxAttempts         int // the first attempt included
}

func backoff(base, max time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// isConnectionLoss: the connection dropped (go-zookeeper also returns raw socket errors).
func isConnectionLoss(err error) bool {
	var ne net.Error
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// opError is a multi the server refused (nothing applied), naming the failing op.
type opError struct {
	index int    // the failing op's place among the caller's ops (from 0)
	op    string // "create", "delete", "set-data" or "check"
	path  string // as the caller gave it (without namespace)
	err   error  // the server's error for that op (zk.ErrNoNode, ...)
	call  string // "multi" or "guarded write", for the message
}

func (e *opError) Error() string {
	return fmt.Sprintf("conn: %s: op %d (%s %s): %v", e.call, e.index, e.op, e.path, e.err)
}

func (e *opError) Unwrap() error { return e.err }

// opCopy copies a multi op, naming it and pointing at the copy's path.
func opCopy(op any) (name string, cp any, path *string) {
	switch o := op.(type) {
	case *zk.CreateRequest:
		c := *o
		return "create", &c, &c.Path
	case *zk.DeleteRequest:
		c := *o
		return "delete", &c, &c.Path
	case *zk.SetDataRequest:
		c := *o
		return "set-data", &c, &c.Path
	case *zk.CheckVersionRequest:
		c := *o
		return "check", &c, &c.Path
	}
	return fmt.Sprintf("%T", op), nil, new(string)
}

// failedOp finds the op a refused multi failed on (the first with an error).
func failedOp(ops []any, res []zk.MultiResponse, err error) *opError {
	if err == nil && len(res) == 0 || errors.Is(err, ErrConnectionLoss) || errors.Is(err, ErrEpochEnded) {
		return nil
	}
	for i, r := range res {
		if r.Error != nil && i < len(ops) {
			name, _, path := opCopy(ops[i])
			return &opError{index: i, op: name, path: *path, err: r.Error, call: "multi"}
		}
	}
	return nil
}

// describeOps names a multi's ops: "set-data /a/b +1 op".
func describeOps(ops []any) string {
	if len(ops) == 0 {
		return "(no ops)"
	}
	name, _, path := opCopy(ops[0])
	switch len(ops) {
	case 1:
		return name + " " + *path
	case 2:
		return name + " " + *path + " +1 op"
	}
	return fmt.Sprintf("%s %s +%d ops", name, *path, len(ops)-1)
}

// Get reads a node's data, retrying on connection loss.
func (s *Session) Get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	return withStat(ctx, s, metrics.OpGet, path, (*zk.Conn).Get)
}

// Set writes a node's data if its version matches (-1: any), retried on
// connection loss only with a real version. It refuses a node named as a
// lock's, lease's or election's contender (ErrInvalidArgument): a write
// there could let the next contender in; lock.Revoke asks a holder.
func (s *Session) Set(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error) {
	if locknode.Recipe(zkpath.Base(path)) {
		return nil, fmt.Errorf("conn: set %s: a recipe's node: %w", path, ErrInvalidArgument)
	}
	e, err := s.epoch(ctx)
	if err != nil {
		return nil, err
	}
	return e.view().Set(ctx, path, data, version)
}

// Create creates a node and returns its path (with the sequence number if
// sequential); only non-sequential creates are retried on connection loss.
func (s *Session) Create(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	e, err := s.epoch(ctx)
	if err != nil {
		return "", err
	}
	return e.view().Create(ctx, path, data, flags, acl)
}

// Delete deletes a node if its version matches (-1: any), retrying on
// connection loss: a retry may delete a node created again at path.
func (s *Session) Delete(ctx context.Context, path string, version int32) error {
	e, err := s.epoch(ctx)
	if err != nil {
		return err
	}
	return e.view().Delete(ctx, path, version)
}

// Children lists a node's children (names), retrying on connection loss.
func (s *Session) Children(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	return withStat(ctx, s, metrics.OpChildren, path, (*zk.Conn).Children)
}

// Exists tells whether a node exists, retrying on connection loss.
func (s *Session) Exists(ctx context.Context, path string) (bool, *zk.Stat, error) {
	return withStat(ctx, s, metrics.OpExists, path, (*zk.Conn).Exists)
}
