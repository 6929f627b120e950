package fault

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// verify checks what the run recorded: hold intervals per domain, writes
// after a lost signal, and the counters against the ledgers.
func (r *faultRun) verify() {
	byDomain := map[string][]*interval{}
	for _, iv := range r.intervals {
		iv.expired = r.expired[iv.session]
		byDomain[iv.domain] = append(byDomain[iv.domain], iv)
		if iv.lostFirst {
			r.stats.holdsLost++
		}
	}
	for _, v := range thirdPartyConflicts(r.thirdParty, r.intervals) {
		r.violate("%s", v)
	}
	r.checkNodes()
	for _, d := range faultDomains() {
		for _, v := range holdConflicts(byDomain[d], domainCapacity(d), (*interval).end) {
			r.violate("%s: %s", d, v)
		}
		strict := holdConflicts(byDomain[d], domainCapacity(d), (*interval).strictEnd)
		if n := len(strict) - len(holdConflicts(byDomain[d], domainCapacity(d), (*interval).end)); n > 0 {
			r.stats.expiryOverlaps += n
			for _, v := range strict {
				r.t.Logf("fault run: %s: by the holders' own signals only (explained by a forced expiry): %s", d, v)
			}
		}
	}

	for _, w := range r.writes {
		if w.check {
			r.stats.checks[w.outcome]++
		} else {
			r.stats.writes[w.outcome]++
		}
		if w.outcome == outOK && !w.hold.lost.IsZero() && w.start.After(w.hold.lost) {
			r.violate("%s: client %d's guarded write at %s went through although its lock was lost at %s",
				w.domain, w.client, w.start.Format(time.StampMicro), w.hold.lost.Format(time.StampMicro))
		}
		if w.outcome == outOther {
			r.t.Logf("fault run: client %d: guarded %s on %s: %v", w.client, map[bool]string{true: "check", false: "write"}[w.check], w.domain, w.err)
		}
	}
	r.checkLedgers()
}

// checkNodes counts the local handoffs of the paired recipes (grants on a
// lock node an earlier grant held; a node's path is unique, as a
// sequential node's), and checks that none of their nodes was granted more
// than faultHandoffPasses+1 times.
func (r *faultRun) checkNodes() {
	turns := map[string][]locktest.Turn{}
	for _, iv := range r.intervals {
		turns[iv.recipe] = append(turns[iv.recipe], locktest.Turn{Node: iv.node, Start: iv.start})
	}
	for _, rec := range faultRecipes {
		if !rec.paired {
			continue
		}
		f := locktest.Turns(turns[rec.name])
		r.stats.localHandoffs[rec.name] = f.LocalHandoffs
		if f.MaxPerNode > faultHandoffPasses+1 {
			r.violate("%s: a lock node was granted %d times in one process, above WithLocalHandoff's %d passes plus one",
				rec.name, f.MaxPerNode, faultHandoffPasses)
		}
	}
}

// thirdPartyConflicts describes every grant that started while the node of
// a holder written into by a third party still existed, in ZooKeeper's
// view: after the write was sent and before the holder began to release
// (its node is deleted only after that) or its session ended. Whether the holder had been told
// its lock was lost does not matter: a write by anyone but the holder must
// not admit a waiter. Pure, for table tests.
func thirdPartyConflicts(recs []thirdPartyRec, ivs []*interval) []string {
	var out []string
	for _, rec := range recs {
		h := rec.hold
		end := h.release
		for _, e := range []time.Time{h.ended, h.expired} {
			if !e.IsZero() && e.Before(end) {
				end = e
			}
		}
		for _, iv := range ivs {
			if iv == h || iv.domain != h.domain || !iv.start.After(rec.at) || !iv.start.Before(end) {
				continue
			}
			out = append(out, fmt.Sprintf("%s: client %d (%s) was granted at %s while client %d's node (%s), written by a third party at %s, existed (released at %s)",
				h.domain, iv.client, iv.recipe, iv.start.Format(time.StampMicro), h.client, h.recipe,
				rec.at.Format(time.StampMicro), h.release.Format(time.StampMicro)))
		}
	}
	return out
}

// holdConflicts sweeps one domain's intervals in time order, each ending at
// end(iv), and describes every hold that began while it could not: an
// exclusive hold while anyone held, a read hold while an exclusive one did,
// a shared hold while capacity others did. Pure, for table tests.
func holdConflicts(ivs []*interval, capacity int, end func(*interval) time.Time) []string {
	type event struct {
		at    time.Time
		start bool
		iv    *interval
	}
	evs := make([]event, 0, 2*len(ivs))
	for _, iv := range ivs {
		if !end(iv).After(iv.start) {
			continue // over before it began: a grant in an already expired session
		}
		evs = append(evs, event{iv.start, true, iv}, event{end(iv), false, iv})
	}
	sort.SliceStable(evs, func(i, j int) bool {
		if !evs[i].at.Equal(evs[j].at) {
			return evs[i].at.Before(evs[j].at)
		}
		return !evs[i].start && evs[j].start // ends first at the same instant
	})
	active := map[*interval]bool{}
	var out []string
	for _, e := range evs {
		if !e.start {
			delete(active, e.iv)
			continue
		}
		var clash []*interval
		shared := 0
		for a := range active {
			switch {
			case e.iv.mode == modeExclusive || a.mode == modeExclusive:
				clash = append(clash, a)
			case e.iv.mode == modeShared:
				shared++
			}
		}
		if e.iv.mode == modeShared && shared >= capacity {
			for a := range active {
				clash = append(clash, a)
			}
		}
		for _, a := range clash {
			out = append(out, fmt.Sprintf("holds overlap: client %d (%s, %s) [%s, %s] and client %d (%s, %s) [%s, %s]",
				a.client, a.recipe, a.mode, stamp(a.start), stamp(end(a)),
				e.iv.client, e.iv.recipe, e.iv.mode, stamp(e.iv.start), stamp(end(e.iv))))
		}
		active[e.iv] = true
	}
	return out
}

func stamp(t time.Time) string { return t.Format("15:04:05.000000") }

// checkLedgers compares, per domain, the counter with the ledger: every
// write applied made one ledger node and added one to the counter, so they
// must agree; every write reported done is in the ledger, and none reported
// refused is.
func (r *faultRun) checkLedgers() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ep, err := connlink.Of(r.admin).Epoch(ctx)
	if err != nil {
		r.t.Errorf("fault run: admin session: %v", err)
		return
	}
	for _, d := range faultDomains() {
		if err := connlink.Of(ep).Sync(ctx, r.ledgerPath(d)); err != nil {
			r.t.Errorf("fault run: sync: %v", err)
			return
		}
		names, _, err := r.admin.Children(ctx, r.ledgerPath(d))
		if err != nil {
			r.t.Errorf("fault run: ledger of %s: %v", d, err)
			continue
		}
		data, _, err := r.admin.Get(ctx, r.counterPath(d))
		if err != nil {
			r.t.Errorf("fault run: counter of %s: %v", d, err)
			continue
		}
		counter, _ := strconv.Atoi(string(data))
		if counter != len(names) {
			r.violate("%s: the counter is %d but %d guarded writes were applied (lost updates: two holders wrote at once)",
				d, counter, len(names))
		}
		applied := make(map[string]bool, len(names))
		for _, n := range names {
			applied[n] = true
		}
		for _, w := range r.writes {
			if w.domain != d || w.check {
				continue
			}
			switch {
			case w.outcome == outOK && !applied[w.ledger]:
				r.violate("%s: client %d's guarded write %s was reported done but is not in the ledger", d, w.client, w.ledger)
			case (w.outcome == outRejected || w.outcome == outOther) && applied[w.ledger]:
				r.violate("%s: client %d's guarded write %s was refused (%v) but was applied", d, w.client, w.ledger, w.err)
			}
		}
	}
}

// deleteData removes the counters and ledgers.
func (r *faultRun) deleteData() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ep, err := connlink.Of(r.admin).Epoch(ctx)
	if err == nil {
		err = locktest.DeleteTree(ctx, ep, r.dataRoot)
	}
	if err != nil {
		r.t.Errorf("fault run: deleting %s: %v", r.dataRoot, err)
	}
}

// leftovers lists every node under root that is not one of the lock paths
// in want (or an ancestor of one): lock nodes, lease nodes, anything the
// recipes or the run left. Lock paths themselves are containers the server
// reaps once empty, but a client cannot tell a container from a persistent
// node (the server hides the marker in the stat), so they are allowed by
// path, and must have no children. found counts the lock paths still there.
func leftovers(ctx context.Context, ep *conn.Epoch, root string, want []string) (left []string, found int, err error) {
	allowed := map[string]bool{root: true}
	for _, p := range want {
		for ; p != root && strings.HasPrefix(p, root+"/"); p = zkpath.Parent(p) {
			allowed[p] = true
		}
	}
	err = locktest.Walk(ctx, ep, root, func(p string, st *zk.Stat) {
		switch {
		case st.EphemeralOwner != 0:
			left = append(left, fmt.Sprintf("%s (ephemeral node of session 0x%x)", p, st.EphemeralOwner))
		case !allowed[p]:
			left = append(left, p+" (persistent node)")
		default:
			found++
		}
	})
	return left, found, err
}

// hygiene: once every client has released and closed, nothing of the run
// is left: no node under the lock root but empty containers, no data root,
// no watch on any server for a path of the run.
func (r *faultRun) hygiene() {
	t := r.t
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ep, err := connlink.Of(r.admin).Epoch(ctx)
	if err != nil {
		t.Errorf("fault run: admin session: %v", err)
		return
	}
	// Sessions closed while their connection was down end only when they
	// expire: allow for that.
	deadline := time.Now().Add(2*r.cfg.sessionTimeout + 10*time.Second)
	var left []string
	var containers int
	for {
		left, containers, err = leftovers(ctx, ep, r.lockRoot, faultLockPaths(r.lockRoot))
		if err == nil && len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err != nil {
		t.Errorf("fault run: listing %s: %v", r.lockRoot, err)
	}
	for i, p := range left {
		if i == 20 {
			t.Errorf("fault run: ... and %d more", len(left)-20)
			break
		}
		t.Errorf("fault run: left behind after every client released and closed: %s", p)
	}
	if ok, _, err := r.admin.Exists(ctx, r.dataRoot); err != nil || ok {
		t.Errorf("fault run: %s still exists (%v)", r.dataRoot, err)
	}
	if len(left) == 0 {
		t.Logf("fault run: hygiene: no lock, lease or guard node left under %s (%d empty lock paths await reaping)",
			r.lockRoot, containers)
	}

	// Watches: the server drops a session's watches when it closes.
	deadline = time.Now().Add(30 * time.Second)
	for i := range r.c.Servers() {
		for {
			found, err := r.watchesOn(ctx, i)
			if err == nil && len(found) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("fault run: server %d still has watches on the run's paths (%v): %s", i, err,
					strings.Join(found, ", "))
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
}

// watchesOn returns the paths of the run that server i reports watched
// (wchc).
func (r *faultRun) watchesOn(ctx context.Context, i int) ([]string, error) {
	out, err := r.c.FourLetter(ctx, i, "wchc")
	if err != nil {
		return nil, err
	}
	if strings.Contains(out, "not executed") || strings.Contains(out, "not in the whitelist") {
		return nil, fmt.Errorf("wchc refused: %s", strings.TrimSpace(out))
	}
	var found []string
	for _, line := range strings.Split(out, "\n") {
		p := strings.TrimSpace(line)
		if strings.HasPrefix(p, r.lockRoot) || strings.HasPrefix(p, r.dataRoot) {
			found = append(found, p)
		}
	}
	return found, nil
}
