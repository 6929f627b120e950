// Package locknode is what the nodes of this module's locks are: their
// names (Schema) and queue order (Parse, Before), their data (NodeData)
// and the revoke mark written into them, and the read/write lock's rule
// for which nodes hold (RWStatuses). It sits below package lock, which
// reads them in Revoke, and below the queue engine (internal/queue), which
// imports lock and builds on it.
package locknode
