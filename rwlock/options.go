package rwlock

import (
	"github.com/zkrecipes/zkrecipes/internal/lockopt"
	"github.com/zkrecipes/zkrecipes/lock"
)

// WithHost sets the identity written into this handle's node names,
// "<host>-R-<seq>" and "<host>-W-<seq>". It may contain '-' (names are
// parsed from the right) but must be non-empty, contain no '/', and only
// characters ZooKeeper accepts in a path; otherwise New fails with an
// error matching conn.ErrInvalidArgument that says why. Default: the
// machine's host name (os.Hostname), with every character ZooKeeper would
// reject replaced by '_'. The node data names the process (host name, pid
// and acquire id) whatever this is. Only rwlock.New takes it.
func WithHost(host string) lock.Option {
	return func(c *lockopt.Config) error {
		c.Given |= lockopt.Host
		c.Host = host
		return nil
	}
}
