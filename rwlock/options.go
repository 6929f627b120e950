package rwlock

// Option configures New; a nil Option makes New fail with an error
// matching conn.ErrInvalidArgument.
type Option func(*config) error

type config struct {
	host      string // "" until WithHost: the sanitised host name
	hostSet   bool
	revocable bool
}

// WithHost sets the identity written into this handle's node names,
// "<host>-R-<seq>" and "<host>-W-<seq>". It may contain '-' (names are
// parsed from the right) but must be non-empty, contain no '/', and only
// characters ZooKeeper accepts in a path; otherwise New fails with an
// error matching conn.ErrInvalidArgument that says why. Default: the
// machine's host name (os.Hostname), with every character ZooKeeper would
// reject replaced by '_'. The node data names the process (host name, pid
// and acquire id) whatever this is.
func WithHost(host string) Option {
	return func(c *config) error { c.host, c.hostSet = host, true; return nil }
}

// WithRevocable makes this handle's read and write nodes revocable instead
// of sealed (default: sealed), as mutex.WithRevocable does for the mutex:
// lock.Revoke, or Curator's Revoker, may then ask the holder to release (its
// Lease.Revoked closes), while the lock stays held until it does. Sealed
// nodes can be written by their own session only; revocable ones cost a
// plain-delete release and a read after every data change. See
// docs/design.md, "Revocation, Curator style".
func WithRevocable() Option {
	return func(c *config) error { c.revocable = true; return nil }
}
