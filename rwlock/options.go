package rwlock

// Option configures New.
type Option func(*config)

type config struct {
	host    string // "" until WithHost: the sanitised host name
	hostSet bool
	relist  bool
}

// WithHost sets the identity written into this handle's node names,
// "<host>-R-<seq>" and "<host>-W-<seq>". It may contain '-' (names are
// parsed from the right) but must be non-empty, contain no '/', and only
// characters ZooKeeper accepts in a path; otherwise New fails with
// ErrInvalidHost. Default: the machine's host name (os.Hostname), with
// every character ZooKeeper would reject replaced by '_'. The node data
// names the process (host name, pid and acquire id) whatever this is.
func WithHost(host string) Option {
	return func(c *config) { c.host, c.hostSet = host, true }
}

// WithRelist(true) makes waiters list the lock's children again after
// every notification instead of deciding from their first listing
// (default false). The grants are the same; it costs one getChildren per
// wake-up. It exists to measure the difference.
func WithRelist(v bool) Option {
	return func(c *config) { c.relist = v }
}
