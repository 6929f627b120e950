package conn

import (
	"slices"
	"strings"
)

// Ensemble names the ZooKeeper ensemble the session connects to: the server
// addresses given to Connect, sorted, without duplicates, joined with ",".
// Sessions given the same addresses, in any order, name the same ensemble;
// nothing asks the servers, so one ensemble reached through other
// addresses (another host name, a subset of its servers) gets another name.
func (s *Session) Ensemble() string {
	srv := slices.Clone(s.servers)
	slices.Sort(srv)
	return strings.Join(slices.Compact(srv), ",")
}

// FullPath is path p of this session as the server knows it: with the
// session's namespace (WithNamespace) in front. p is not checked.
func (s *Session) FullPath(p string) string { return s.abs(p) }
