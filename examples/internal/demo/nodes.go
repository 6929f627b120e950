package demo

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
)

// CreateNodes creates the data nodes, each holding "0" (and their parents,
// as containers).
func CreateNodes(ctx context.Context, s *conn.Session, paths ...string) error {
	for _, p := range paths {
		if err := CreateParents(ctx, s, p); err != nil {
			return err
		}
		if _, err := s.Create(ctx, p, []byte("0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			return err
		}
	}
	return nil
}

// CreateParents creates the missing ancestors of path as containers, which
// ZooKeeper removes once they are empty.
func CreateParents(ctx context.Context, s *conn.Session, path string) error {
	for i := 1; i < len(path); i++ {
		if path[i] != '/' {
			continue
		}
		_, err := s.Create(ctx, path[:i], nil, zk.FlagContainer, zk.WorldACL(zk.PermAll))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// DeleteNodes removes the data nodes, within 10 s; ZooKeeper reaps their
// parents, which are containers, once they are empty.
func DeleteNodes(s *conn.Session, paths ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	for _, p := range paths {
		if err := s.Delete(ctx, p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Read returns the data of the node at path.
func Read(ctx context.Context, s *conn.Session, path string) (string, error) {
	data, _, err := s.Get(ctx, path)
	return string(data), err
}
