package attack_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/metrics"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// descendants lists every node below path through the bystander.
func descendants(f *fixture, path string) []string {
	var out []string
	for _, ch := range children(f.Raw(), path) {
		p := path + "/" + ch
		out = append(out, p)
		out = append(out, descendants(f, p)...)
	}
	return out
}

// labelled has s take a mutex on path with label.
func labelled(t *testing.T, ctx context.Context, s *conn.Session, path, label string, opts ...lock.Option) (*mutex.InterProcessMutex, *conn.Lease) {
	t.Helper()
	m, err := mutex.New(s, path, opts...)
	require.NoError(t, err)
	l, err := m.Acquire(lock.WithLabel(ctx, label))
	require.NoError(t, err, label)
	return m, l
}

// sole returns the one participant that parts lists.
func sole(t *testing.T, ctx context.Context, parts func(context.Context) ([]lock.Participant, error)) lock.Participant {
	t.Helper()
	ps, err := parts(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	return ps[0]
}

// revokeMarkNoOwner reports an error if the participant of a revoked node
// names an owner: the revoke mark replaced the node's data.
func revokeMarkNoOwner(t *testing.T, name string, p lock.Participant) {
	t.Helper()
	if p.Known || p.Host != "" || p.PID != 0 || p.Label != "" {
		t.Errorf("%s: after Revoke Participant says Known=%v Host=%q PID=%d Label=%q: the revoke mark read as an owner", name, p.Known, p.Host, p.PID, p.Label)
	}
}

// maxLabel is the bound lock.WithLabel documents, in bytes.
const maxLabel = 256

// TestLabelRefusedBeforeQueueingInEveryLock: a label over maxLabel bytes,
// not UTF-8 or with control characters (C0, DEL, C1) fails every lock's
// Acquire and TryAcquire with conn.ErrInvalidArgument, saying it is the
// label, and creates no node; one of exactly maxLabel bytes (multi-byte
// runes) is taken and read back whole.
func TestLabelRefusedBeforeQueueingInEveryLock(t *testing.T) {
	f := newFixture(t)
	s := f.Session()
	bad := map[string]string{
		"too long":  strings.Repeat("a", maxLabel+1),
		"newline":   "req\n42",
		"tab":       "req\t42",
		"nul":       "req\x0042",
		"del":       "req\x7f",
		"c1 NEL":    "req\u0085",
		"not utf-8": "req\xff",
		"esc":       "\x1b[2J",
	}
	type acquire = func(context.Context) error
	lockers := map[string]func(path string) (acquire, error){
		"mutex":          func(p string) (acquire, error) { m, err := mutex.New(s, p); return acquireErr(m), err },
		"mutex try":      func(p string) (acquire, error) { m, err := mutex.New(s, p); return tryErr(m), err },
		"semaphoremutex": func(p string) (acquire, error) { m, err := semaphoremutex.New(s, p); return acquireErr(m), err },
		"semaphore try":  func(p string) (acquire, error) { m, err := semaphoremutex.NewSemaphore(s, p, 2); return tryErr(m), err },
		"exclusive":      func(p string) (acquire, error) { m, err := exclusive.New(s, p); return acquireErr(m), err },
		"read":           func(p string) (acquire, error) { return acquireErr(newRW(t, s, p).ReadLock()), nil },
		"write try":      func(p string) (acquire, error) { return tryErr(newRW(t, s, p).WriteLock()), nil },
		"multilock": func(p string) (acquire, error) {
			a, err := mutex.New(s, p+"/a")
			require.NoError(t, err)
			b, err := exclusive.New(s, p+"/b")
			require.NoError(t, err)
			ml, err := multilock.New(a, b)
			return func(ctx context.Context) error { _, err := ml.Acquire(ctx); return err }, err
		},
	}
	i := 0
	for lname, mk := range lockers {
		for bname, label := range bad {
			i++
			path := f.Path("bad" + string(rune('a'+i%26)) + strings.Repeat("x", i/26))
			acq, err := mk(path)
			require.NoError(t, err)
			err = acq(lock.WithLabel(ctxT(t, 10*time.Second), label))
			if !errors.Is(err, conn.ErrInvalidArgument) || !strings.Contains(err.Error(), "label") {
				t.Errorf("%s, label %s: err = %v, want conn.ErrInvalidArgument naming the label", lname, bname, err)
			}
			if d := descendants(f, path); len(d) != 0 {
				t.Errorf("%s, label %s: created %v", lname, bname, d)
			}
		}
	}
	// The longest valid label, of 4-byte runes, is written and read back whole.
	long := strings.Repeat("\U0001F600", maxLabel/4)
	require.Len(t, long, maxLabel)
	ctx := ctxT(t, 10*time.Second)
	m, _ := labelled(t, ctx, s, f.Path("long"), long)
	require.Equal(t, long, sole(t, ctx, m.Participants).Label)
	require.NoError(t, m.Release(ctx))
}

// TestLabelWithSyntaxCharsIsNotParsedAsOwner: a label made of the node
// data's own syntax (quotes, braces, key=value) is read back as that label,
// with the holder's real host and pid, by Participants and by
// `zkrecipes locks -json`: a caller's label cannot forge an owner.
func TestLabelWithSyntaxCharsIsNotParsedAsOwner(t *testing.T) {
	f := newFixture(t)
	s := f.Session()
	labels := []string{
		`"},"host":"evil","pid":1,"x":{"`,
		`x host=evil pid=1 label=forged`,
		`\"\\u0000`,
		` leading and trailing `,
		`a;b,c|d:e`,
	}
	host, _ := os.Hostname()
	for i, label := range labels {
		path := f.Path("syn" + string(rune('a'+i)))
		ctx := ctxT(t, 10*time.Second)
		m, _ := labelled(t, ctx, s, path, label)
		p := sole(t, ctx, m.Participants)
		require.Equal(t, label, p.Label, "label read back")
		require.True(t, p.Known, "known")
		require.Equal(t, os.Getpid(), p.PID, "pid of %q", label)
		require.Equal(t, host, p.Host, "host of %q", label)

		doc, out, ok := f.locksJSON(t, path)
		if !ok {
			continue
		}
		require.Len(t, doc.Queues, 1, "%s", out)
		require.Len(t, doc.Queues[0].Nodes, 1, "%s", out)
		o := doc.Queues[0].Nodes[0].Owner
		require.Equal(t, label, o.Label, "zkrecipes label: %s", out)
		require.Equal(t, os.Getpid(), o.PID, "zkrecipes pid: %s", out)
		require.Equal(t, host, o.Host, "zkrecipes host: %s", out)
	}
}

// TestLabelKeptAcrossLocalHandoffAndReentry: a local handoff and a
// re-entry keep the label of the acquire that created the node, and the
// handoff's Fence is above the first grant's.
func TestLabelKeptAcrossLocalHandoffAndReentry(t *testing.T) {
	f := newFixture(t)
	s := f.Session()
	path := f.Path("handoff")
	ctx := ctxT(t, 30*time.Second)
	a, la := labelled(t, ctx, s, path, "creator", lock.WithLocalHandoff(3, 0))
	b, err := mutex.New(s, path, lock.WithLocalHandoff(3, 0))
	require.NoError(t, err)
	fa := fenceOf(t, ctx, la)
	// re-entry with another label
	_, err = a.Acquire(lock.WithLabel(ctx, "reentry"))
	require.NoError(t, err)
	require.Equal(t, "creator", sole(t, ctx, a.Participants).Label)
	require.NoError(t, a.Release(ctx))
	hb := hold(lock.WithLabel(ctx, "second"), b)
	hb.notGranted(t, 300*time.Millisecond, "b granted while a holds")
	require.NoError(t, a.Release(ctx))
	lb := hb.wait(t, 10*time.Second, "b")
	require.Equal(t, "creator", sole(t, ctx, a.Participants).Label)
	fb := fenceOf(t, ctx, lb)
	require.Equal(t, 1, fb.Compare(fa), "handoff fence %v after %v", fb, fa)
	require.NoError(t, hb.release())
}

// TestLabelSurvivesRevokeRequest: Revoke writes its mark into a revocable
// holder's node; Participants still lists the holder, by the uuid in its
// name, and says the revoke was requested, not an owner named "__REVOKE__".
// The label cannot survive: Curator's protocol replaces the node's data with
// exactly "__REVOKE__" (what Curator's holders watch for), so owner and label
// are honestly unknown (lock.Participant's and WithLabel's doc say so).
func TestLabelSurvivesRevokeRequest(t *testing.T) {
	f := newFixture(t)
	s := f.Session()
	path := f.Path("rev")
	ctx := ctxT(t, 30*time.Second)
	m, l := labelled(t, ctx, s, path, "job-7", lock.WithRevocable())
	p := sole(t, ctx, m.Participants)
	require.Equal(t, "job-7", p.Label)
	sO := f.Session()
	other, err := mutex.New(sO, path, lock.WithRevocable())
	require.NoError(t, err)
	require.NoError(t, lock.Revoke(ctx, sO, p.Node))
	recv(t, l.Revoked(), 10*time.Second, "Revoked did not close")
	p2 := sole(t, ctx, other.Participants)
	t.Logf("after Revoke: %+v", p2)
	require.True(t, p2.Holding)
	revokeMarkNoOwner(t, "mutex holder", p2)
	if p2.ID != p.ID || p.ID == "" {
		t.Errorf("after Revoke, Participant.ID = %q, want the uuid in the name %q", p2.ID, p.ID)
	}
	if out, ok := f.zkrecipes(t, "locks", path); ok {
		t.Logf("zkrecipes locks after Revoke:\n%s", out)
		if strings.Contains(out, "address=__REVOKE__") {
			t.Errorf("zkrecipes locks names the revoke mark as a Curator address (docs/operations.md: `curator address=` for a node whose data is an IP address)")
		}
		if !strings.Contains(out, "revoke requested") || !strings.Contains(out, p.ID) {
			t.Errorf("zkrecipes locks does not say the revoke of %s was requested", p.ID)
		}
	}
	require.NoError(t, m.Release(ctx))
}

// TestLabelOnEveryNodeOfEveryRecipe: "Every lock's Acquire and TryAcquire
// writes it into the node it creates": a semaphore's lease node and the
// internal lock node of its waiter, a multilock's nodes (a mutex and an
// exclusive lock), a read and a write node, a TryAcquire's node: the
// semaphore's Participants and `zkrecipes locks -json` over the whole tree
// show each node with its acquire's label.
func TestLabelOnEveryNodeOfEveryRecipe(t *testing.T) {
	f, ctx := setUp(t, 30*time.Second)
	s1, s2 := f.Session(), f.Session()
	// semaphore of one lease: holder "sem-holder", waiter "sem-waiter"
	semA, err := semaphoremutex.NewSemaphore(s1, f.Path("sem"), 1)
	require.NoError(t, err)
	_, err = semA.Acquire(lock.WithLabel(ctx, "sem-holder"))
	require.NoError(t, err)
	semB, err := semaphoremutex.NewSemaphore(s2, f.Path("sem"), 1)
	require.NoError(t, err)
	wctx, wcancel := context.WithCancel(lock.WithLabel(ctx, "sem-waiter"))
	defer wcancel()
	go func() { _, _ = semB.Acquire(wctx) }()
	waitFor(t, 10*time.Second, "the semaphore waiter's lock node", func() bool {
		ps, err := semA.Participants(ctx)
		return err == nil && len(ps) >= 2
	})
	ps, err := semA.Participants(ctx)
	require.NoError(t, err)
	for _, p := range ps {
		if p.Label != "sem-holder" && p.Label != "sem-waiter" {
			t.Errorf("semaphore participant %s (holding %v): label %q", p.Node, p.Holding, p.Label)
		}
	}
	// multilock: mutex + exclusive
	ma, err := mutex.New(s1, f.Path("ml/a"))
	require.NoError(t, err)
	mb, err := exclusive.New(s1, f.Path("ml/b"))
	require.NoError(t, err)
	ml, err := multilock.New(ma, mb)
	require.NoError(t, err)
	_, err = ml.Acquire(lock.WithLabel(ctx, "multi"))
	require.NoError(t, err)
	// rwlock: a reader (TryAcquire) and a writer waiting behind it
	_, ok, err := newRW(t, s1, f.Path("rw")).ReadLock().TryAcquire(lock.WithLabel(ctx, "reader"))
	require.NoError(t, err)
	require.True(t, ok)
	hw := hold(lock.WithLabel(wctx, "writer"), newRW(t, s2, f.Path("rw")).WriteLock())
	hw.notGranted(t, 200*time.Millisecond, "writer granted beside a reader")

	doc, out, ok := f.locksJSON(t, f.Root())
	if !ok {
		t.Skip("no zkrecipes binary")
	}
	want := map[string][]string{"sem": {"sem-holder", "sem-waiter"}, "ml/a": {"multi"}, "rw": {"reader", "writer"}}
	seen := 0
	for _, q := range doc.Queues {
		rel := strings.TrimPrefix(q.Path, f.Root()+"/")
		for k, labels := range want {
			if rel != k && !strings.HasPrefix(rel, k+"/") {
				continue
			}
			for _, n := range q.Nodes {
				seen++
				okl := false
				for _, l := range labels {
					okl = okl || n.Owner.Label == l
				}
				if !okl {
					t.Errorf("%s %s (%s, %s): label %q, want one of %v", q.Path, n.Name, n.Kind, n.Status, n.Owner.Label, labels)
				}
			}
		}
	}
	require.Equal(t, 5, seen, "nodes listed: %s", out)
	// zkrecipes locks lists no exclusive lock (not a queue): its node's data
	// carries the label all the same.
	require.Contains(t, string(f.Data(f.Path("ml/b/lock"))), "multi", "the exclusive lock's node data")
}

// TestForgedLabelWithControlCharsNotPrintedRaw: WithLabel refuses control
// characters, but a bystander can queue a node named and filled like ours
// whose label holds a terminal escape sequence. `zkrecipes locks` prints
// what the node's data says: it must not write the escape byte to the
// operator's terminal.
func TestForgedLabelWithControlCharsNotPrintedRaw(t *testing.T) {
	f, ctx := setUp(t, 30*time.Second)
	path := f.Path("forged")
	m, l := labelled(t, ctx, f.Session(), path, "LABELMARK")
	data := f.Data(l.Path())
	t.Logf("our node's data: %q", data)
	require.Contains(t, string(data), "LABELMARK")
	evil := "\x1b]0;pwned\x07\x1b[2J"
	enc, err := json.Marshal(evil)
	require.NoError(t, err)
	var forged string
	if strings.Contains(string(data), `"LABELMARK"`) {
		forged = strings.Replace(string(data), `"LABELMARK"`, string(enc), 1)
	} else {
		forged = strings.Replace(string(data), "LABELMARK", evil, 1)
	}
	name := zkpath.Base(l.Path())
	prefix := name[:strings.LastIndexByte(name, '-')+1]
	uuid := "_c_00000000-0000-4000-8000-000000000000-lock-"
	if strings.HasPrefix(prefix, "_c_") {
		prefix = uuid
	}
	_, err = f.Raw().Create(path+"/"+prefix, []byte(forged), zkEphemeralSequential, zkWorld)
	require.NoError(t, err)
	ps, err := m.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 2)
	t.Logf("forged participant: %+v", ps[1])
	out, ok := f.zkrecipes(t, "locks", path)
	if !ok {
		t.Skip("no zkrecipes binary")
	}
	t.Logf("zkrecipes locks:\n%q", out)
	require.NotContains(t, out, "\x1b", "zkrecipes locks writes a forged label's escape byte to the terminal")
	require.NoError(t, m.Release(ctx))
}

// TestParticipantIDIsTheUUIDInTheName checks lock.Participant's "ID is
// the contender's id: for a lock, its unique acquire id (the uuid in the
// name)": a bystander queues a node named with one uuid whose data is a
// copy of our holder's (another id, host, pid, label). Participants and
// `zkrecipes locks -json` must give it the uuid of its name, not our
// holder's id: two contenders with one id is what an operator cannot
// untangle.
func TestParticipantIDIsTheUUIDInTheName(t *testing.T) {
	f, ctx := setUp(t, 30*time.Second)
	path := f.Path("idname")
	m, l := labelled(t, ctx, f.Session(), path, "holder")
	const forgedUUID = "00000000-0000-4000-8000-000000000000"
	_, err := f.Raw().Create(path+"/_c_"+forgedUUID+"-lock-", f.Data(l.Path()), zkEphemeralSequential, zkWorld)
	require.NoError(t, err)
	ps, err := m.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 2)
	holderID := strings.TrimPrefix(zkpath.Base(l.Path()), "_c_")[:36]
	require.Equal(t, holderID, ps[0].ID, "the holder's ID")
	if ps[1].ID != forgedUUID {
		t.Errorf("Participant.ID of node %s = %q, want the uuid in its name %q (the holder's id is %q)", zkpath.Base(ps[1].Node), ps[1].ID, forgedUUID, holderID)
	}
	if doc, _, ok := f.locksJSON(t, path); ok {
		for _, n := range doc.Queues[0].Nodes {
			if strings.Contains(n.Name, forgedUUID) && n.Owner.ID != forgedUUID {
				t.Errorf("zkrecipes locks: node %s owner id %q, not the uuid in its name", n.Name, n.Owner.ID)
			}
		}
	}
	require.NoError(t, m.Release(ctx))
}

// TestInvalidLabelOnReentryAndLocalHandoff: WithLabel's "A label over 256
// bytes, not UTF-8 or with control characters fails with an error matching
// conn.ErrInvalidArgument at once, re-entry and local handoff included",
// for acquires that would create no
// node anyway: a re-entry of the holder (a failed one must leave its hold
// count as it was) and a goroutine queueing in the process behind a local
// handoff holder (it must fail at once, not wait for the holder).
func TestInvalidLabelOnReentryAndLocalHandoff(t *testing.T) {
	f, ctx := setUp(t, 30*time.Second)
	s := f.Session()
	path := f.Path("inv")
	a, _ := labelled(t, ctx, s, path, "ok", lock.WithLocalHandoff(3, 0))
	bad := lock.WithLabel(ctx, "bad\n")
	_, err := a.Acquire(bad)
	t.Logf("re-entry with an invalid label: %v", err)
	if err != nil {
		require.ErrorIs(t, err, conn.ErrInvalidArgument)
		require.NoError(t, a.Release(ctx))
		require.Empty(t, children(f.Raw(), path), "one release after a refused re-entry frees the lock")
	} else {
		t.Errorf("re-entry with label %q granted (doc: fails with ErrInvalidArgument)", "bad\n")
		require.NoError(t, a.Release(ctx))
		require.NoError(t, a.Release(ctx))
	}
	_, err = a.Acquire(lock.WithLabel(ctx, "ok"))
	require.NoError(t, err)
	b, err := mutex.New(s, path, lock.WithLocalHandoff(3, 0))
	require.NoError(t, err)
	took, err := timed(bad, 2*time.Second, acquireErr(b))
	t.Logf("local waiter with an invalid label: %v after %v", err, took)
	require.ErrorIs(t, err, conn.ErrInvalidArgument, "a local waiter with an invalid label")
	require.Less(t, took, time.Second, "refused at once, not after waiting")
	require.NoError(t, a.Release(ctx))

	// The same for an rwlock's re-entry and for a semaphore mutex whose
	// handle is held (its Acquire would wait for the handle's release).
	rw := newRW(t, s, f.Path("inv-rw"))
	_, err = rw.WriteLock().Acquire(lock.WithLabel(ctx, "ok"))
	require.NoError(t, err)
	_, err = rw.WriteLock().Acquire(bad)
	require.ErrorIs(t, err, conn.ErrInvalidArgument, "rwlock re-entry with an invalid label")
	require.NoError(t, rw.WriteLock().Release(ctx))
	require.Empty(t, children(f.Raw(), f.Path("inv-rw")), "one release after a refused re-entry frees the rwlock")
	sm, err := semaphoremutex.New(s, f.Path("inv-sm"))
	require.NoError(t, err)
	_, err = sm.Acquire(lock.WithLabel(ctx, "ok"))
	require.NoError(t, err)
	_, err = timed(bad, 2*time.Second, acquireErr(sm))
	require.ErrorIs(t, err, conn.ErrInvalidArgument, "semaphore mutex held by its handle, invalid label")
	require.NoError(t, sm.Release(ctx))
}

// TestRevokeMarkNotReadAsOwnerInEveryRecipe is TestLabelSurvivesRevokeRequest
// for a writer of rwlock and a semaphore lease: after Revoke, the revoked
// holder's Participant must not name "__REVOKE__" as its host (lock.Participant:
// "Host and PID say which process queued it, when its data tells (Curator
// writes only an address, which becomes Host)"); the mark replaced the label.
func TestRevokeMarkNotReadAsOwnerInEveryRecipe(t *testing.T) {
	f, ctx := setUp(t, 30*time.Second)
	type parts func(context.Context) ([]lock.Participant, error)
	check := func(name string, l *conn.Lease, p parts, s *conn.Session) {
		require.NoError(t, lock.Revoke(ctx, s, l.Path()), name)
		recv(t, l.Revoked(), 5*time.Second, "%s: Revoked not closed", name)
		ps, err := p(ctx)
		require.NoError(t, err)
		for _, x := range ps {
			if x.Node == l.Path() {
				t.Logf("%s after Revoke: %+v", name, x)
				revokeMarkNoOwner(t, name, x)
				if strings.Contains(x.Node, "/_c_") && !strings.Contains(x.Node, x.ID) || x.ID == "__REVOKE__" {
					t.Errorf("%s: after Revoke Participant.ID = %q, not the uuid in the name of %s", name, x.ID, x.Node)
				}
			}
		}
	}
	sRW := f.Session()
	rw := newRW(t, sRW, f.Path("rw"), lock.WithRevocable())
	wl, err := rw.WriteLock().Acquire(lock.WithLabel(ctx, "lbl"))
	require.NoError(t, err)
	check("rwlock writer", wl, rw.Participants, sRW)
	sSem := f.Session()
	sem, err := semaphoremutex.NewSemaphore(sSem, f.Path("sem"), 2, lock.WithRevocable())
	require.NoError(t, err)
	sl, err := sem.Acquire(lock.WithLabel(ctx, "lbl"))
	require.NoError(t, err)
	check("semaphore lease", sl, sem.Participants, sSem)
}

// TestZkrecipesHelpNamesKeptAndLabel: `zkrecipes --help` lists the
// statuses and owners each node may show; the command prints `kept` (a
// write node kept after a downgrade, README and docs/operations.md) and the
// owner's `label=` (lock.WithLabel), so its help must name both.
func TestZkrecipesHelpNamesKeptAndLabel(t *testing.T) {
	bin := zkrecipesBin(t)
	if bin == "" {
		t.Skip("no zkrecipes binary")
	}
	out, _ := exec.Command(bin, "--help").CombinedOutput()
	for _, w := range []string{"kept", "label"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("zkrecipes --help does not mention %q:\n%s", w, firstLines(string(out), 8))
		}
	}
}

func firstLines(s string, n int) string {
	l := strings.SplitN(s, "\n", n+1)
	if len(l) > n {
		l = l[:n]
	}
	return strings.Join(l, "\n")
}

// zkrecipesBin is the zkrecipes command built from this tree (ZKRECIPES_BIN
// if set), built once per test binary; the test fails if it cannot be built.
func zkrecipesBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if b := os.Getenv("ZKRECIPES_BIN"); b != "" {
			binPath = b
			return
		}
		dir, err := os.MkdirTemp("", "attack-zkrecipes-")
		if err != nil {
			binErr = err
			return
		}
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Dir(filepath.Dir(file))
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "zkrecipes"), "./cmd/zkrecipes")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/zkrecipes: %v: %s", err, out)
			return
		}
		binPath = filepath.Join(dir, "zkrecipes")
	})
	require.NoError(t, binErr)
	return binPath
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// zkrecipes runs the zkrecipes command on the fixture's servers with args
// and fails the test if it fails. Its output is the standard output alone
// with -json (so that it parses), else the standard and error outputs; ok
// is false when there is no command to run.
func (f *fixture) zkrecipes(t *testing.T, args ...string) (out string, ok bool) {
	t.Helper()
	bin := zkrecipesBin(t)
	if bin == "" {
		return "", false
	}
	cmd := exec.Command(bin, append([]string{"-servers", strings.Join(f.Servers(), ",")}, args...)...)
	run := cmd.CombinedOutput
	for _, a := range args {
		if a == "-json" {
			run = cmd.Output
		}
	}
	b, err := run()
	require.NoError(t, err, "zkrecipes %v: %s", args, b)
	return string(b), true
}

// locksDoc is what `zkrecipes locks -json` prints.
type locksDoc struct{ Queues []locksQueue }

type locksQueue struct {
	Path, Recipe string
	Nodes        []struct {
		Name, Kind, Status, Session string
		Owner                       struct {
			Client, Host, Label, ID string
			PID                     int
		}
	}
}

// locksJSON runs `zkrecipes locks -json path` (false when there is no
// command to run).
func (f *fixture) locksJSON(t *testing.T, path string) (locksDoc, string, bool) {
	t.Helper()
	var doc locksDoc
	out, ok := f.zkrecipes(t, "-json", "locks", path)
	if ok {
		require.NoError(t, json.Unmarshal([]byte(out), &doc), "%s", out)
	}
	return doc, out, ok
}

// cliStatus runs `zkrecipes locks -json path` and maps node name to status
// (nil when there is no command to run).
func cliStatus(t *testing.T, f *fixture, path string) map[string]string {
	t.Helper()
	doc, _, ok := f.locksJSON(t, path)
	if !ok {
		return nil
	}
	m := map[string]string{}
	for _, q := range doc.Queues {
		for _, n := range q.Nodes {
			m[n.Name] = n.Status
		}
	}
	return m
}

type zkrJSON struct {
	Path   string `json:"path"`
	Queues []struct {
		Path   string `json:"path"`
		Recipe string `json:"recipe"`
		Nodes  []struct {
			Name   string `json:"name"`
			Kind   string `json:"kind"`
			Status string `json:"status"`
			Owner  struct {
				Client string `json:"client"`
				Label  string `json:"label"`
			} `json:"owner"`
		} `json:"nodes"`
	} `json:"queues"`
}

// TestCommandInNamespaceWithDigestACL: every recipe used through
// sessions with WithNamespace, WithDigestAuth and a digest-only WithACL;
// the zkrecipes command given the same -namespace and -auth shows every
// queue with the statuses the recipes grant (operations.md, "What it
// prints").
func TestCommandInNamespaceWithDigestACL(t *testing.T) {
	bin := zkrecipesBin(t)
	f, ctx := setUp(t, 60*time.Second)
	ns := f.Root() + "/ns"
	acl := zk.DigestACL(zk.PermAll, "u", "p")
	opts := []conn.Option{conn.WithNamespace(ns), conn.WithDigestAuth("u", "p"), conn.WithACL(acl)}
	sA, sB, sC := f.Session(opts...), f.Session(opts...), f.Session(opts...)
	// bystander creates the namespace root (the chroot must exist?)
	ensure(t, f.Raw(), zkWorld, f.Root())
	require.NoError(t, f.Raw().AddAuth("digest", []byte("u:p")))

	hold1 := func(lk locker, label string) *holder {
		c := ctx
		if label != "" {
			c = lock.WithLabel(ctx, label)
		}
		return hold(c, lk)
	}
	// mutex: A holds, B waits with a label
	mA, _ := mutex.New(sA, "/app/m")
	mB, _ := mutex.New(sB, "/app/m")
	hold1(mA, "a").wait(t, 10*time.Second, "mA")
	hB := hold1(mB, "req-1")
	hB.notGranted(t, 100*time.Millisecond, "mB")
	// rwlock: A writes, C queues a write, A downgrades and releases the write: kept
	rwA, _ := rwlock.New(sA, "/app/rw", rwlock.WithHost("a"))
	rwC, _ := rwlock.New(sC, "/app/rw", rwlock.WithHost("c"))
	rwB, _ := rwlock.New(sB, "/app/rw", rwlock.WithHost("b"))
	downgraded := make(chan error, 1)
	release := make(chan struct{})
	go func() {
		if _, err := rwA.WriteLock().Acquire(ctx); err != nil {
			downgraded <- err
			return
		}
		hc := hold(ctx, rwC.WriteLock())
		_ = hc
		waitFor(t, 5*time.Second, "C queued", func() bool { return len(children(f.Raw(), ns+"/app/rw")) == 2 })
		if _, err := rwA.ReadLock().Acquire(ctx); err != nil {
			downgraded <- err
			return
		}
		downgraded <- rwA.WriteLock().Release(ctx)
		<-release
		_ = rwA.ReadLock().Release(context.WithoutCancel(ctx))
	}()
	require.NoError(t, recv(t, downgraded, 10*time.Second, "downgrade"))
	hold(ctx, rwB.ReadLock()).notGranted(t, 100*time.Millisecond, "reader behind the kept node")
	// semaphore of 2: A and B hold, C is next
	semA, _ := semaphoremutex.NewSemaphore(sA, "/app/sem", 2)
	semB, _ := semaphoremutex.NewSemaphore(sB, "/app/sem", 2)
	semC, _ := semaphoremutex.NewSemaphore(sC, "/app/sem", 2)
	_, err := semA.Acquire(ctx)
	require.NoError(t, err)
	_, err = semB.Acquire(ctx)
	require.NoError(t, err)
	hold(ctx, &semLocker{sem: semC}).notGranted(t, 200*time.Millisecond, "semC")
	// semaphore mutex: A holds, B waits
	smA, _ := semaphoremutex.New(sA, "/app/sm")
	smB, _ := semaphoremutex.New(sB, "/app/sm")
	hold(ctx, smA).wait(t, 5*time.Second, "smA")
	hold(ctx, smB).notGranted(t, 200*time.Millisecond, "smB")
	// election: A leads, B follows
	eA, _ := leader.New(sA, "/app/e", "alpha")
	eB, _ := leader.New(sB, "/app/e", "beta")
	_, err = eA.Campaign(ctx)
	require.NoError(t, err)
	hold(ctx, electionLocker{eB}).notGranted(t, 200*time.Millisecond, "eB")

	run := func(args ...string) (string, int) {
		c, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(c, bin, append([]string{"-servers", strings.Join(f.Servers(), ","), "-namespace", ns, "-auth", "u:p"}, args...)...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("run: %v", err)
		}
		return string(out), code
	}
	out, code := run("-json", "locks", "/app")
	require.Equal(t, 0, code, out)
	var doc zkrJSON
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	got := map[string][]string{}
	for _, q := range doc.Queues {
		var st []string
		for _, n := range q.Nodes {
			st = append(st, n.Status+"/"+n.Kind+"/"+n.Owner.Label)
		}
		got[q.Path+" ("+q.Recipe+")"] = st
	}
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%s: %v", k, got[k])
	}
	want := map[string][]string{
		"/app/m (mutex)":       {"holds/mutex/a", "waits/mutex/req-1"},
		"/app/rw (rwlock)":     {"kept/write/", "waits/write/", "holds/read/", "waits/read/"},
		"/app/sem (semaphore)": {"holds/semaphore lease/", "holds/semaphore lease/", "next/semaphore lock/"},
		"/app/sm (semaphore)":  {"holds/semaphore lock/", "waits/semaphore lock/"},
		"/app/e (leader)":      {"leads/leader/", "follows/leader/"},
	}
	for k, w := range want {
		if strings.Join(got[k], " ") != strings.Join(w, " ") {
			t.Errorf("%s: %v, want %v", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("queues %v, want %d", keys, len(want))
	}
	out, code = run("leader", "/app/e")
	t.Logf("leader: %d %s", code, out)
	if code != 0 || !strings.Contains(out, "alpha") || !strings.Contains(out, "beta") {
		t.Errorf("leader output: %d %s", code, out)
	}
	// without -auth, status 5
	c2, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	o2, err := exec.CommandContext(c2, bin, "-servers", strings.Join(f.Servers(), ","), "-namespace", ns, "locks", "/app").CombinedOutput()
	ee, _ := err.(*exec.ExitError)
	if ee == nil || ee.ExitCode() != 5 {
		t.Errorf("without -auth: %v %s, want exit 5", err, o2)
	}
	// no such path: 3
	out, code = run("locks", "/nope")
	if code != 3 {
		t.Errorf("no such path: %d %s", code, out)
	}
	close(release)
}

// TestLabelAfterLocalHandoffNamesFirstHolder: with lock.WithLocalHandoff,
// req-1 acquires and releases, and req-2, waiting in the same session, is
// passed the node without a write. The view must not present req-1 as the
// holder: Participants marks the holder LocalHandoff (lock.Participant:
// its ID and Label are the node's first holder's), and `zkrecipes locks`
// says so beside the label, in text and JSON. Writing req-2's label into
// the node instead would cost a write per pass: the pass costs none.
func TestLabelAfterLocalHandoffNamesFirstHolder(t *testing.T) {
	forEach(t, []string{"mutex", "semaphoremutex"}, func(t *testing.T, f *fixture, recipe string) {
		ctx := ctxT(t, 30*time.Second)
		var writes atomic.Int64
		s := f.Session(conn.WithMetrics(metrics.Hooks{Request: func(r metrics.Request) {
			switch r.Op {
			case metrics.OpCreate, metrics.OpDelete, metrics.OpSet, metrics.OpMulti, metrics.OpSetACL:
				writes.Add(1)
			}
		}}))
		path := f.Path("lh/") + recipe
		type handle interface {
			locker
			Participants(context.Context) ([]lock.Participant, error)
		}
		newHandle := func() handle {
			var h handle
			var err error
			if recipe == "mutex" {
				h, err = mutex.New(s, path, lock.WithLocalHandoff(3, 0))
			} else {
				h, err = semaphoremutex.New(s, path, lock.WithLocalHandoff(3, 0))
			}
			require.NoError(t, err)
			return h
		}
		a, b := newHandle(), newHandle()
		_, err := a.Acquire(lock.WithLabel(ctx, "req-1"))
		require.NoError(t, err)
		hb := hold(lock.WithLabel(ctx, "req-2"), b)
		hb.notGranted(t, 300*time.Millisecond, "req-2 granted while req-1 holds")
		before := writes.Load()
		require.NoError(t, a.Release(ctx))
		lb := hb.wait(t, 10*time.Second, "req-2")
		require.Equal(t, int64(0), writes.Load()-before, "writes from req-1's release to req-2's grant")
		require.Equal(t, int64(1), fenceOf(t, ctx, lb).Pass, "req-2 was not passed the node locally")
		ps, err := b.Participants(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, ps)
		if h := ps[0]; !h.Holding || h.Label != "req-1" || !h.LocalHandoff {
			t.Errorf("Participants' holder %+v: want Holding, Label req-1 (the node's first holder) and LocalHandoff", h)
		}

		doc, out, ok := f.locksJSON(t, path)
		if !ok {
			t.Skip("no zkrecipes binary")
		}
		var raw struct {
			Queues []struct {
				Nodes []struct {
					Status string
					Owner  map[string]any
				}
			}
		}
		require.NoError(t, json.Unmarshal([]byte(out), &raw))
		held := 0
		for _, q := range raw.Queues {
			for _, n := range q.Nodes {
				if n.Status != "holds" {
					continue
				}
				held++
				if n.Owner["label"] != "req-1" || n.Owner["handoff"] != true {
					t.Errorf("zkrecipes locks -json: holder's owner %v, want label req-1 with handoff true (the label is its first holder's)", n.Owner)
				}
			}
		}
		require.Equal(t, 1, held, "holders listed: %v", doc)
		text, _ := f.zkrecipes(t, "locks", path)
		if !strings.Contains(text, `label="req-1" (local handoff: id and label are the node's first holder's)`) {
			t.Errorf("zkrecipes locks prints req-1's label as the holder's:\n%s", text)
		}
		require.NoError(t, hb.release())
	})
}
