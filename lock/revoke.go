package lock

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// Revoke asks the holder of node (a Participant.Node or Lease.Path of a
// mutex, semaphoremutex or rwlock) to release, as Curator's
// Revoker.attemptRevoke does. A revocable holder (WithRevocable) sees
// Lease.Revoked close and keeps the lock until it releases. A sealed node
// (the default), or one s may not write, fails with ErrNotRevocable. A
// name that is not a lock contender's fails with conn.ErrInvalidArgument,
// checked first; a node that is gone is nil.
func Revoke(ctx context.Context, s *conn.Session, node string) error {
	if err := revoke(ctx, s, node); err != nil {
		return fmt.Errorf("lock: revoke %s: %w", node, err)
	}
	return nil
}

func revoke(ctx context.Context, s *conn.Session, node string) error {
	if err := zkpath.Validate(node); err != nil {
		return err
	}
	if !locknode.Revocable(zkpath.Base(node)) {
		return fmt.Errorf("not a lock's contender node: %w", conn.ErrInvalidArgument)
	}
	if s == nil {
		return fmt.Errorf("nil session: %w", conn.ErrInvalidArgument)
	}
	ep, err := connlink.Of(s).Epoch(ctx)
	if err != nil {
		return err
	}
	for {
		data, st, err := connlink.Of(ep).Get(ctx, node)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return nil
		case errors.Is(err, zk.ErrNoAuth):
			return fmt.Errorf("%w: %w", ErrNotRevocable, err)
		case err != nil:
			return err
		}
		// A sealed node gives its own session every right: refuse it here.
		if d, _ := locknode.DecodeData(data); d.Sealed {
			return ErrNotRevocable
		}
		_, err = connlink.Of(ep).Set(ctx, node, []byte(locknode.RevokeMark), st.Version)
		switch {
		case err == nil || errors.Is(err, zk.ErrNoNode):
			return nil
		case errors.Is(err, zk.ErrBadVersion):
			continue // changed since we read it: read it again
		case errors.Is(err, zk.ErrNoAuth):
			return fmt.Errorf("%w: %w", ErrNotRevocable, err)
		}
		return err
	}
}
