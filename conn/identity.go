package conn

import (
	"slices"
	"strings"
)

// ensemble names the session's ZooKeeper ensemble (connlink.Session.Ensemble).
func (s *Session) ensemble() string {
	srv := slices.Clone(s.servers)
	slices.Sort(srv)
	return strings.Join(slices.Compact(srv), ",")
}
