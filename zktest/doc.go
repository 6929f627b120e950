// Package zktest gives a test — ours or a user's — a real ZooKeeper, like
// net/http/httptest gives it a real HTTP server. It never fakes ZooKeeper.
//
//	func TestLock(t *testing.T) {
//		c := zktest.New(t) // one server, stopped in t.Cleanup
//		conn, _, err := zk.Connect(c.Servers(), 5*time.Second)
//		...
//		path := c.Root() + "/lock" // unique per cluster
//		...
//	}
//
// A Cluster is one standalone server (the default) or a three-server ensemble
// (WithServers(3)), with a tickTime of 500ms by default so that sessions of
// 1–10 s are allowed. Fault controls act on one server: Kill (SIGKILL),
// Restart (same client port and data), Pause (SIGSTOP) and Resume; Leader,
// FourLetter, Mntr and WaitServing observe the servers (FourLetterAt and
// MntrAt do the same for any address). ExpireEpoch ends a conn.Session's
// current ZooKeeper session on the server side (ExpireSession any client's,
// given its id and password), and Proxy sits between one client
// and the servers to cut, blackhole, delay or lose responses. CheckWire
// tells whether a patched go-zookeeper (conn.WithPatchedZK) keeps what
// conn relies on.
//
// # Backends
//
// Start and New use the first backend available, unless WithBackend or the
// environment variable ZK_BACKEND (docker, local or external) forces one:
//
//  1. external: the servers listed in ZK_SERVERS (comma-separated host:port).
//     They are shared, so fault controls return ErrUnsupported, Stop leaves
//     them as they are, and tests keep apart only through Root.
//  2. docker, if a Driver was passed and the image ZK_IMAGE (default
//     "zookeeper:3.9", the official image) is present locally: one container
//     per server. The driver is the module
//     github.com/zkrecipes/zkrecipes/zktest/docker, through testcontainers-go:
//     zktest.WithDriver(docker.Driver()). It needs a Docker host (DOCKER_HOST,
//     Docker contexts and TESTCONTAINERS_* apply) and Ryuk's image
//     (testcontainers-go's reaper), or TESTCONTAINERS_RYUK_DISABLED=true where
//     there is no registry. Without a registry, build a ZooKeeper image from
//     Debian packages with scripts/zk-image.sh (several minutes) and set
//     ZK_IMAGE=zkrecipes/zookeeper:3.8-debian. Package zktest itself depends
//     on no Docker module: the modules of those who do not import the driver
//     list none.
//  3. local: each server is a child java process, from ZOOKEEPER_HOME (an
//     unpacked Apache ZooKeeper release) or Debian's zookeeper package
//     (/usr/share/java/zookeeper.jar), with its configuration and data in a
//     temporary directory. It needs Java and ZooKeeper's jars. A standalone
//     server is up in about a second: the fastest backend where Java is
//     installed.
//  4. docker with the images pulled, as testcontainers-go does where a
//     registry exists: the last resort, when a driver was passed and the
//     daemon answers but neither the image nor a local install is present.
//     ZK_PULL=never turns pulling off (set it where there is no registry). A
//     forced docker backend (ZK_BACKEND=docker) pulls a missing image too,
//     unless ZK_PULL=never.
//
// Cluster.Source says which one a cluster runs on.
//
// # Guarantees
//
//   - Start returns only when every server answers `srvr` with a Mode: line
//     and, for an ensemble, one server is leader; Restart only when the
//     restarted server answers.
//   - Client addresses are 127.0.0.1:port (docker and local) and do not
//     change across Kill and Restart.
//   - The four-letter words are all enabled (docker and local) and the admin
//     server is off.
//   - Stop (and New's cleanup) kills every server and removes containers,
//     networks, processes and directories. Local servers run in their own
//     process group and, on Linux, are killed by the kernel if the test
//     binary dies first (a panic, a timeout, a SIGKILL). Containers of a test
//     binary that died that way are removed by Ryuk seconds later; with Ryuk
//     off (TESTCONTAINERS_RYUK_DISABLED=true), by the next docker cluster
//     started on the same machine (same PID namespace), which removes the
//     containers labelled org.zkrecipes.zktest of dead test binaries.
//   - Root is unique per Cluster; nothing is created under it for you.
//
// Ports are picked free and bound by the servers a moment later; Start retries
// with new ports if another process took one meanwhile, but a port taken
// while its server is killed makes Restart fail. Nothing guarantees that an
// external ensemble is empty or reachable from other hosts.
//
// # Missing prerequisites
//
// New fails the test (t.Fatal) with what to install if no backend is
// available. Tests that prefer to skip on a developer machine use Start and
// RequireOrSkip, which skips — except under CI=true, where a missing
// prerequisite is a failure.
//
// # Errors
//
// Errors wrap the sentinels of this package; compare with errors.Is:
//
//   - ErrNoBackend: no backend is available; wraps the reasons below and
//     gives the commands that provide one, the fastest first.
//   - ErrDockerUnavailable, ErrImageNotFound, ErrLocalUnavailable: a backend
//     (forced or tried) cannot run; ErrDockerUnavailable too when no Driver
//     was passed.
//   - ErrBadOption: an invalid Option, ZK_BACKEND or ZK_PULL value.
//   - ErrNotServing: a server did not come up in time (60 s docker, 30 s
//     local) or no leader was found; the error holds the tail of its log.
//   - ErrUnsupported: the backend cannot do it (faults on an external
//     ensemble).
//   - ErrNoServer: the server index is out of range.
//   - ErrStopped: the Cluster was stopped.
//   - ErrExpire: ExpireEpoch or ExpireSession could not close the session.
package zktest
