// Command zkrecipes shows who holds what in a ZooKeeper lock tree: every
// lock queue under a path (zkrecipes locks PATH) or the leader and
// followers of an election (zkrecipes leader PATH), once or live (-watch).
//
//	go install github.com/zkrecipes/zkrecipes/cmd/zkrecipes@latest
//	zkrecipes -servers zk1:2181,zk2:2181 locks /locks
//	zkrecipes leader -json /services/billing/leader
//
// It recognises the recipes' queues by their node names (shared with
// Apache Curator and kazoo; see the library's README): mutex
// ("_c_<uuid>-lock-<seq>", kazoo's "<32hex>__lock__<seq>", go-zookeeper's
// "_c_<32hex>-lock-<seq>"), read/write lock ("<host>-R-<seq>",
// "<host>-W-<seq>"), semaphore ("<path>/leases/_c_<uuid>-lease-<seq>" and
// its internal lock "<path>/locks/_c_<uuid>-lock-<seq>"; without leases/,
// only a one-lease semaphore of ours, whose node data says so, is one: any
// other "locks" node is walked as a path) and LeaderLatch
// ("_c_<uuid>-latch-<seq>"). Who holds is decided by the rules the recipes
// themselves use (the library's internal/queue predicates): the lowest
// sequence number holds a mutex, a write lock and an election; readers hold
// until the first writer, and so does a downgrade's read node wherever it
// sorts, while the write node kept for it after the write lock's release
// is "kept" (rwlock.RWLock.Participants decides the same); every lease node is a held lease, and the first
// node of a semaphore's internal lock is "next" (it takes the next lease
// that frees up), or holds the lease itself when it is a one-lease
// semaphore of ours holding with no lease node.
//
// For each node it prints its status (holds, next, waits, kept; leads,
// follows), kind (mutex, read, write, semaphore lease, semaphore lock,
// leader), name, session id (the node's ephemeralOwner, in hex), age (from
// its ctime, the server's clock) and the owner its data names, recognised
// and never guessed: this library's data (host, pid, acquire id, and the
// label the acquire carried, lock.WithLabel, printed as label=; both are
// the acquire's that created the node, and a node that lock.WithLocalHandoff
// passes between goroutines without a write says so: "local handoff: id
// and label are the node's first holder's"); Curator's
// default data, the client's IP address, on a Curator-named node; kazoo's
// identifier on a kazoo-named node; go-zookeeper's empty data on its names;
// a LeaderLatch participant id; the revoke mark ("revoke requested": a
// holder asked to release by lock.Revoke or Curator's Revoker, whose data the
// mark replaced, so its owner and label are unknown); otherwise "unknown".
//
// A Curator semaphore contender that holds the internal lock creates its
// lease node before it counts the leases; while it waits for one to free
// up, its lease node is listed as a held lease (the command does not know
// the semaphore's lease count).
//
// -watch keeps the view live: every node it lists carries a child watch,
// and each change (a handoff, a grant, a release, a node queued or gone)
// is printed as it happens, with the view redrawn. It keeps working across
// a reconnect and says when the session is suspended (connection lost) or
// lost (expired, or cut off for the session timeout), and rebuilds the
// view on the next session. It uses the library's session manager (package
// conn). -json prints the view as JSON (with -watch, one document per line
// per change).
//
// # Connecting
//
// -servers (default ZK_SERVERS, else 127.0.0.1:2181), -namespace (default
// ZK_NAMESPACE) and -auth user:password, digest credentials (default
// ZK_AUTH), as package conn takes them (WithNamespace, WithDigestAuth).
//
// # Exit status
//
//	0  ok (also when no lock is under PATH, or nobody campaigns)
//	1  any other error
//	2  bad usage (-h prints the usage and exits 0; also leader on a PATH
//	   that holds no election's node but a mutex's, a read/write lock's or
//	   a semaphore's: the error says which)
//	3  no such path
//	4  no server reachable within -timeout
//	5  authentication refused (NOAUTH or AUTH_FAILED)
package main
