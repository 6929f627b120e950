package conn

// A guarded grant stands on another node of its session, its guard, until
// Unguard (rwlock's downgrade: docs/design.md, "Downgrading a write
// lock"). Meanwhile its check, loss and Fence Zxid are the guard's.

// Guard makes the lease, granted but not handed out (unarmed), stand on
// node (czxid zxid), with pass as its Fence's Pass.
func (v *leaseView) Guard(node string, zxid, pass int64) {
	v.mu.Lock()
	v.guard, v.fence = node, zxid
	v.mu.Unlock()
	v.pass = pass
}

// Unguard moves the grant onto its own node (check and loss); the recipe
// calls it before it deletes the guard.
func (v *leaseView) Unguard() {
	v.mu.Lock()
	v.guard = ""
	v.mu.Unlock()
}

// checked is the node the grant stands on: its guard, else its own node.
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
