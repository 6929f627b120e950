package conn

// A guarded grant stands on another node of its session, its guard, until
// unguard (rwlock's downgrade: docs/design.md, "Downgrading a write
// lock"). Meanwhile its check, loss and Fence Zxid are the guard's.

// guardWith makes l, granted but not handed out (unarmed), stand on node
// (czxid zxid), with pass as its Fence's Pass.
func (l *Lease) guardWith(node string, zxid, pass int64) {
	l.mu.Lock()
	l.guard, l.fence = node, zxid
	l.mu.Unlock()
	l.pass = pass
}

// unguard moves the grant onto its own node (check and loss); the recipe
// calls it before it deletes the guard.
func (l *Lease) unguard() {
	l.mu.Lock()
	l.guard = ""
	l.mu.Unlock()
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
