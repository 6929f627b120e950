package testzk

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// DataWatches returns the paths on which session sid holds data watches
// (GetW, ExistsW), on every server of c (four-letter wchc; zktest's
// servers allow every four-letter word). It fails t if a server cannot
// tell.
func DataWatches(t testing.TB, c *zktest.Cluster, sid int64) []string {
	t.Helper()
	var out []string
	for i := range c.Servers() {
		txt, err := c.FourLetter(Ctx(t, 10*time.Second), i, "wchc")
		if err != nil {
			t.Fatalf("testzk: wchc on server %d: %v", i, err)
		}
		if strings.Contains(txt, "not in the whitelist") {
			t.Fatalf("testzk: wchc not allowed on server %d", i)
		}
		in := false
		for _, line := range strings.Split(txt, "\n") {
			if strings.HasPrefix(line, "0x") {
				in = strings.TrimSpace(line) == fmt.Sprintf("0x%x", sid)
				continue
			}
			if p := strings.TrimSpace(line); in && p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// WatchCount is mntr's zk_watch_count summed over c's servers: the data
// and child watches of every session.
func WatchCount(t testing.TB, c *zktest.Cluster) int {
	t.Helper()
	n := 0
	for i := range c.Servers() {
		m, err := c.Mntr(Ctx(t, 10*time.Second), i)
		if err != nil {
			t.Fatalf("testzk: mntr on server %d: %v", i, err)
		}
		v, err := strconv.Atoi(m["zk_watch_count"])
		if err != nil {
			t.Fatalf("testzk: mntr on server %d: zk_watch_count %q: %v", i, m["zk_watch_count"], err)
		}
		n += v
	}
	return n
}
