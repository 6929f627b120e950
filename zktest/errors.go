package zktest

import "errors"

// Sentinel errors. Compare with errors.Is; the returned errors wrap them with
// details (what is missing, which server, the tail of a server log).
var (
	// ErrUnsupported: the operation is not possible with the cluster's
	// backend, e.g. Kill on an external ensemble named by ZK_SERVERS.
	ErrUnsupported = errors.New("zktest: not supported by this backend")

	// ErrNoBackend: no ZooKeeper could be provided. It wraps the reasons
	// (ErrDockerUnavailable, ErrImageNotFound, ErrLocalUnavailable) and says
	// what to install.
	ErrNoBackend = errors.New("zktest: no ZooKeeper available")

	// ErrDockerUnavailable: no Docker daemon answered, or no Driver was
	// passed (WithDriver).
	ErrDockerUnavailable = errors.New("zktest: docker unavailable")

	// ErrImageNotFound: the ZooKeeper image (ZK_IMAGE), or Ryuk's, is not
	// present locally, and pulling it failed or is turned off
	// (ZK_PULL=never); without a registry, build the first with
	// scripts/zk-image.sh and turn Ryuk off (TESTCONTAINERS_RYUK_DISABLED=true).
	ErrImageNotFound = errors.New("zktest: zookeeper image not found locally")

	// ErrLocalUnavailable: no java executable or no ZooKeeper jars
	// (ZOOKEEPER_HOME or Debian's /usr/share/java/zookeeper.jar).
	ErrLocalUnavailable = errors.New("zktest: local zookeeper unavailable")

	// ErrBadOption: an Option or an environment variable has an invalid value.
	ErrBadOption = errors.New("zktest: invalid option")

	// ErrNotServing: a server did not answer `srvr` with a Mode: line in
	// time, or the ensemble has no leader.
	ErrNotServing = errors.New("zktest: server not serving")

	// ErrNoServer: the server index is out of range.
	ErrNoServer = errors.New("zktest: no such server")

	// ErrStopped: the cluster was stopped.
	ErrStopped = errors.New("zktest: cluster stopped")

	// ErrExpire: ExpireSession could not close the session (the server
	// refused the handshake, e.g. the session had already expired).
	ErrExpire = errors.New("zktest: cannot expire session")
)

// isMissingPrerequisite reports whether err means "nothing to run ZooKeeper
// with", as opposed to "it was there but failed".
func isMissingPrerequisite(err error) bool {
	return errors.Is(err, ErrNoBackend) || errors.Is(err, ErrDockerUnavailable) ||
		errors.Is(err, ErrImageNotFound) || errors.Is(err, ErrLocalUnavailable)
}
