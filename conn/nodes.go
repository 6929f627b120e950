package conn

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// Get reads a node's data, retrying on connection loss.
func (s *Session) Get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	e, err := s.epoch(ctx)
	if err != nil {
		return nil, nil, err
	}
	return e.view().Get(ctx, path)
}

// Set writes a node's data if its version matches (-1: any); retried on
// connection loss only with a real version. It refuses, with
// ErrInvalidArgument, a node named as a lock's, a lease's or an election's
// contender: a write there can let the next contender in while its
// holder holds. To ask a holder to release, use lock.Revoke.
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

// Delete deletes a node if its version matches (-1: any). Retried on
// connection loss: zk.ErrNoNode may then mean it was deleted, and a retry
// may delete a node created again at path.
func (s *Session) Delete(ctx context.Context, path string, version int32) error {
	e, err := s.epoch(ctx)
	if err != nil {
		return err
	}
	return e.view().Delete(ctx, path, version)
}

// Children lists a node's children (names, not paths), retrying on
// connection loss.
func (s *Session) Children(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	e, err := s.epoch(ctx)
	if err != nil {
		return nil, nil, err
	}
	return e.view().Children(ctx, path)
}

// Exists tells whether a node exists, retrying on connection loss.
func (s *Session) Exists(ctx context.Context, path string) (bool, *zk.Stat, error) {
	e, err := s.epoch(ctx)
	if err != nil {
		return false, nil, err
	}
	return e.view().Exists(ctx, path)
}
