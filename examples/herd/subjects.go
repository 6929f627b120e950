package main

import (
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

// subjects are the locks compared, in the order of the table.
func subjects() []subject {
	return []subject{
		{"exclusive", "every release wakes every waiter; all race to create one node",
			"all waiters watch one node", func(s *conn.Session, path string, _ int) (locker, bool, error) {
				l, err := exclusive.New(s, path)
				return l, true, err
			}},
		{"mutex", "a release wakes only the next waiter in the queue",
			"each waiter watches its predecessor", func(s *conn.Session, path string, _ int) (locker, bool, error) {
				// Each contender acquires and releases on one goroutine, as
				// the per-goroutine reentrant mutex requires.
				m, err := mutex.New(s, path)
				return m, true, err
			}},
		{"rwlock", "readers wake together when the writer ahead of them leaves",
			"1 in 10 a writer; readers watch the writer ahead", func(s *conn.Session, path string, i int) (locker, bool, error) {
				rw, err := rwlock.New(s, path)
				if err != nil {
					return nil, false, err
				}
				// The first holder and one waiter in ten are writers.
				if write := i%10 == 5 || i == 0; write {
					return rw.WriteLock(), true, nil
				}
				return rw.ReadLock(), false, nil
			}},
	}
}
