// Package locknode is what the nodes of this module's locks are: their
// names (Schema), their data (NodeData) and the revoke mark written into
// them. It sits below package lock, which reads them in Revoke, and below
// the queue engine (internal/queue), which imports lock and builds on it.
package locknode
