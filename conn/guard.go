package conn

// A guarded grant stands on another node of its session, its guard, until
// the recipe hands it to its own node (unguard): rwlock's downgrade, a
// read lock granted at once because the goroutine's write node (the
// guard) keeps everyone else out. While guarded, the grant's check
// (GuardedWrite, connlink.Lease.CheckOp) is on the guard, the guard's
// deletion is a loss (seen through a watch on it once Lost or Revoked is
// called), and its Fence is the guard's czxid with the recipe's pass: it
// sorts after the guard's own grant and before the grant of any node
// created after the guard.

// guardWith makes l, a lease just granted and not handed out yet (its
// watch not armed), a grant that stands on node, which exists and whose
// czxid is zxid, with pass as its Fence's Pass.
func (l *Lease) guardWith(node string, zxid, pass int64) {
	l.mu.Lock()
	l.guard, l.fence = node, zxid
	l.mu.Unlock()
	l.pass = pass
}

// unguard hands the grant to its own node: from now on its check is on
// that node, and the guard's deletion is no loss. The recipe calls it once
// the grant is safe on its own node, before it deletes the guard.
func (l *Lease) unguard() {
	l.mu.Lock()
	l.guard = ""
	l.mu.Unlock()
}

// checked is the node whose existence the grant stands on: its guard
// while it has one, else its own node.
func (l *Lease) checked() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.guard != "" {
		return l.guard
	}
	return l.path
}

// guardedBy reports whether node is the grant's guard.
func (l *Lease) guardedBy(node string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.guard != "" && l.guard == node
}
