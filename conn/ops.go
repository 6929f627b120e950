package conn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// The operations below are bound to the epoch: they run on its own
// connection, fail with ErrEpochEnded once it has ended, and return when ctx
// ends (with ctx's error wrapped). Paths are absolute and validated; the
// session's namespace is added on the way in and removed on the way out.
// Errors from the server are wrapped and match go-zookeeper's sentinels
// (errors.Is(err, zk.ErrNoNode)).

// Get reads a node's data. Retried on connection loss.
func (e *Epoch) Get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	var data []byte
	var st *zk.Stat
	err := e.call(ctx, OpGet, path, true, func(zc *zk.Conn, p string) (err error) {
		data, st, err = zc.Get(p)
		return err
	})
	return data, st, err
}

// GetW reads a node's data and leaves a data watch on it. The channel gets
// one event (the node changed or was deleted, or the watch was dropped
// because the epoch ended) and is then closed. Retried on connection loss.
func (e *Epoch) GetW(ctx context.Context, path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	var data []byte
	var st *zk.Stat
	var ch <-chan zk.Event
	err := e.call(ctx, OpGetW, path, true, func(zc *zk.Conn, p string) (err error) {
		data, st, ch, err = zc.GetW(p)
		return err
	})
	return data, st, ch, err
}

// Children lists a node's children (names, not paths). Retried.
func (e *Epoch) Children(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	var names []string
	var st *zk.Stat
	err := e.call(ctx, OpChildren, path, true, func(zc *zk.Conn, p string) (err error) {
		names, st, err = zc.Children(p)
		return err
	})
	return names, st, err
}

// Exists tells whether a node exists. Retried.
func (e *Epoch) Exists(ctx context.Context, path string) (bool, *zk.Stat, error) {
	var ok bool
	var st *zk.Stat
	err := e.call(ctx, OpExists, path, true, func(zc *zk.Conn, p string) (err error) {
		ok, st, err = zc.Exists(p)
		return err
	})
	return ok, st, err
}

// Set writes a node's data if its version matches (-1: any). Retried only
// with a real version, since an unversioned set could overwrite a later one.
func (e *Epoch) Set(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error) {
	var st *zk.Stat
	err := e.call(ctx, OpSet, path, version >= 0, func(zc *zk.Conn, p string) (err error) {
		st, err = zc.Set(p, data, version)
		return err
	})
	return st, err
}

// Delete deletes a node if its version matches (-1: any). Retried; a retry
// that finds the node gone returns zk.ErrNoNode, which after a retry may mean
// the first attempt succeeded.
func (e *Epoch) Delete(ctx context.Context, path string, version int32) error {
	return e.call(ctx, OpDelete, path, true, func(zc *zk.Conn, p string) error {
		return zc.Delete(p, version)
	})
}

// Create creates a node and returns its path (with the sequence number for
// sequential nodes). Non-sequential creates are retried; a retry can then
// return zk.ErrNodeExists. Sequential creates are not retried: on connection
// loss the error matches ErrConnectionLoss and the node may exist.
func (e *Epoch) Create(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	var created string
	retry := flags&zk.FlagSequence == 0
	err := e.call(ctx, OpCreate, path, retry, func(zc *zk.Conn, p string) (err error) {
		if flags == zk.FlagContainer {
			created, err = zc.CreateContainer(p, data, flags, acl)
		} else {
			created, err = zc.Create(p, data, flags, acl)
		}
		return err
	})
	return e.s.strip(created), err
}

// CreateParents creates every missing ancestor of path (and of the
// namespace) as a container node, which the server removes once it is empty.
// Nodes that exist already are fine.
func (e *Epoch) CreateParents(ctx context.Context, path string) error {
	if err := ValidatePath(path); err != nil {
		return err
	}
	full := e.s.cfg.namespace + path
	for i := 1; i < len(full); i++ {
		if full[i] != '/' {
			continue
		}
		err := e.callAbs(ctx, OpCreate, full[:i], true, func(zc *zk.Conn, p string) error {
			_, err := zc.CreateContainer(p, nil, zk.FlagContainer, e.s.cfg.acl)
			return err
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// Multi runs ops (*zk.CreateRequest, *zk.DeleteRequest, *zk.SetDataRequest,
// *zk.CheckVersionRequest) atomically. Not retried: on connection loss the
// error matches ErrConnectionLoss and the ops may or may not have been
// applied. The error of a failed op is returned wrapped.
func (e *Epoch) Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	abs := make([]any, len(ops))
	for i, op := range ops {
		var err error
		if abs[i], err = e.s.absOp(op); err != nil {
			return nil, err
		}
	}
	var res []zk.MultiResponse
	err := e.callAbs(ctx, OpMulti, "(multi)", false, func(zc *zk.Conn, _ string) (err error) {
		res, err = zc.Multi(abs...)
		return err
	})
	for i := range res {
		res[i].String = e.s.strip(res[i].String)
	}
	if err == nil {
		for i, r := range res {
			if r.Error != nil {
				return res, fmt.Errorf("conn: multi op %d: %w", i, r.Error)
			}
		}
	}
	return res, err
}

// Sync makes the server this epoch talks to catch up with the leader.
func (e *Epoch) Sync(ctx context.Context, path string) error {
	return e.call(ctx, OpSync, path, true, func(zc *zk.Conn, p string) error {
		_, err := zc.Sync(p)
		return err
	})
}

// call validates and namespaces path, then runs f under callAbs.
func (e *Epoch) call(ctx context.Context, op, path string, retry bool, f func(*zk.Conn, string) error) error {
	if err := ValidatePath(path); err != nil {
		return fmt.Errorf("conn: %s: %w", op, err)
	}
	return e.callAbs(ctx, op, e.s.abs(path), retry, f)
}

// callAbs runs f against the epoch's connection, retrying on connection loss
// when retry is set, as the retry policy allows.
func (e *Epoch) callAbs(ctx context.Context, op, full string, retry bool, f func(*zk.Conn, string) error) error {
	policy := e.s.cfg.retry
	for attempt := 1; ; attempt++ {
		if err := e.Err(); err != nil {
			return fmt.Errorf("conn: %s %s: %w", op, full, err)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("conn: %s %s: %w", op, full, err)
		}
		e.s.stats.count(op)
		err := e.await(ctx, func() error { return f(e.zc, full) })
		if err == nil {
			return nil
		}
		if !isConnectionLoss(err) || errors.Is(err, ErrEpochEnded) || ctx.Err() != nil {
			return fmt.Errorf("conn: %s %s: %w", op, full, err)
		}
		if e.Err() != nil {
			return fmt.Errorf("conn: %s %s: %w: %w", op, full, ErrConnectionLoss, e.Err())
		}
		if !retry || policy.MaxAttempts > 0 && attempt >= policy.MaxAttempts {
			return fmt.Errorf("conn: %s %s: %w: %w", op, full, ErrConnectionLoss, err)
		}
		e.s.log.Sugar().Debugf("retrying %s %s after connection loss (attempt %d)", op, full, attempt)
		if err := sleep(ctx, e.ctx, policy.delay(attempt)); err != nil {
			return fmt.Errorf("conn: %s %s: %w", op, full, err)
		}
	}
}

// await runs f, which blocks while go-zookeeper is disconnected, and stops
// waiting when ctx or the epoch ends. When the epoch ends with the request in
// flight, the error matches both ErrEpochEnded and ErrConnectionLoss.
func (e *Epoch) await(ctx context.Context, f func() error) error {
	res := make(chan error, 1) // buffered: f may finish after we stopped waiting
	go func() { res <- f() }()
	select {
	case err := <-res:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-e.ctx.Done():
		return fmt.Errorf("%w: %w", ErrConnectionLoss, e.Err())
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
		if err := ValidatePath(p); err != nil {
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
	return nil, fmt.Errorf("%w: multi: unsupported op %T", ErrInvalidOption, op)
}
