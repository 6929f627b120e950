package attack_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe4_InterleavedDrainMassCancelBystander attacks CHANGELOG's
// "Draining one session's waiters after plain deletes ... A woken waiter now
// decides from its session's latest listing less the nodes the session knows
// have left": 45 waiters of three sessions, interleaved in one queue (A, B,
// C, A, ...), each its own handle, behind a holder of a fourth session, on
// recipes whose releases are plain deletes (revocable mutex and write lock,
// leader's Resign) and on the sealed mutex. At once: a third of them cancel,
// a bystander deletes a sixth of the nodes, the holder releases. Checked:
//   - lock's "Acquire blocks until the lock is held or ctx ends; one whose ctx
//     ends first returns an error matching ctx.Err()": every cancelled waiter
//     fails with context.Canceled, none is granted, and every other returns;
//   - mutual exclusion (docs/safety.md guarantee 1): no surviving grant while
//     another survivor holds (a waiter whose node the bystander deleted is
//     excused, as "Deleting a holder's node lets the next waiter in"; for the
//     leader, which queues again, it is not);
//   - FIFO (mutex: "contenders are granted in the order their nodes were
//     created"; leader: "Participants become leader in the order they
//     campaigned"): survivors granted in the order of their nodes;
//   - nothing left: no node under the path, no watch of the three sessions.
//
// Rounds 0 and 1 cancel and delete before the release; round 2 does all
// three at the same time (a cancelled waiter may then be granted, and is
// then a holder like any other).
func TestProbe4_InterleavedDrainMassCancelBystander(t *testing.T) {
	for _, recipe := range []string{"mutex-revocable", "leader", "rwlock-revocable", "mutex"} {
		t.Run(recipe, func(t *testing.T) {
			c := zktest.New(t)
			ss := []*conn.Session{session(t, c.Servers()), session(t, c.Servers()), session(t, c.Servers())}
			hs := session(t, c.Servers())
			zc := raw(t, c)
			for round := 0; round < 3; round++ {
				path := fmt.Sprintf("%s/r4-drain/%s-%d", c.Root(), recipe, round)
				ws := runDrain(t, c, recipe, path, ss, hs, 45, int64(round+1), round == 2)
				var surv []*drainWaiter
				for i, w := range ws {
					switch w.fate {
					case "cancelled":
						if round == 2 {
							// cancelled while the release ran: granted or ctx's error
							if w.lease == nil && !errors.Is(w.err, context.Canceled) {
								t.Errorf("round %d waiter %d (%s) cancelled: err %v", round, i, w.node, w.err)
							}
						} else if w.lease != nil || !errors.Is(w.err, context.Canceled) {
							t.Errorf("round %d waiter %d (%s) cancelled before the release: lease %v err %v", round, i, w.node, w.lease != nil, w.err)
						}
					case "survivor":
						if w.err != nil || w.lease == nil {
							t.Errorf("round %d waiter %d (%s) survivor: err %v", round, i, w.node, w.err)
							continue
						}
						surv = append(surv, w)
					case "deleted":
						if recipe == "leader" && (w.err != nil || w.lease == nil) {
							t.Errorf("round %d waiter %d (%s) deleted, must lead later: err %v", round, i, w.node, w.err)
						}
					}
					if w.overlap != "" && !(w.fate == "deleted" && recipe != "leader") {
						t.Errorf("round %d: two holders: %s (%s) granted while %sheld", round, w.node, w.fate, w.overlap)
					}
				}
				byGrant := append([]*drainWaiter(nil), surv...)
				sort.Slice(byGrant, func(i, j int) bool { return byGrant[i].grantIdx < byGrant[j].grantIdx })
				for i := range surv {
					if surv[i] != byGrant[i] {
						var a, b []string
						for j := range surv {
							a = append(a, surv[j].node[strings.LastIndexByte(surv[j].node, '-')+1:])
							b = append(b, byGrant[j].node[strings.LastIndexByte(byGrant[j].node, '-')+1:])
						}
						t.Errorf("round %d: survivors not granted FIFO:\nqueued  %v\ngranted %v", round, a, b)
						break
					}
				}
				waitFor(t, 10*time.Second, "no node left", func() bool { return len(children(zc, path)) == 0 })
				for i, s := range ss {
					sid := epochOf(t, s).SessionID()
					if !eventually(5*time.Second, func() bool { return len(sessionWatches(t, c, 0, sid)) == 0 }) {
						t.Errorf("round %d: session %d keeps watches %v", round, i, sessionWatches(t, c, 0, sid))
					}
				}
			}
		})
	}
}
