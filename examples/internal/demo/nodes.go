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
	ep, err := s.Epoch(ctx)
	if err != nil {
		return err
	}
	for _, p := range paths {
		if err := ep.CreateParents(ctx, p); err != nil {
			return err
		}
		if _, err := ep.Create(ctx, p, []byte("0"), 0, s.ACL()); err != nil {
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
	ep, err := s.Epoch(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range paths {
		if err := ep.Delete(ctx, p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Read returns the data of the node at path.
func Read(ctx context.Context, s *conn.Session, path string) (string, error) {
	ep, err := s.Epoch(ctx)
	if err != nil {
		return "", err
	}
	data, _, err := ep.Get(ctx, path)
	return string(data), err
}
