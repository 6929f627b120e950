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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
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
	type try func(ctx context.Context, path string) error
	lockers := map[string]try{
		"mutex": func(ctx context.Context, p string) error {
			m, err := mutex.New(s, p)
			require.NoError(t, err)
			_, err = m.Acquire(ctx)
			return err
		},
		"mutex try": func(ctx context.Context, p string) error {
			m, err := mutex.New(s, p)
			require.NoError(t, err)
			_, _, err = m.TryAcquire(ctx)
			return err
		},
		"semaphoremutex": func(ctx context.Context, p string) error {
			m, err := semaphoremutex.New(s, p)
			require.NoError(t, err)
			_, err = m.Acquire(ctx)
			return err
		},
		"semaphore try": func(ctx context.Context, p string) error {
			m, err := semaphoremutex.NewSemaphore(s, p, 2)
			require.NoError(t, err)
			_, _, err = m.TryAcquire(ctx)
			return err
		},
		"exclusive": func(ctx context.Context, p string) error {
			m, err := exclusive.New(s, p)
			require.NoError(t, err)
			_, err = m.Acquire(ctx)
			return err
		},
		"read": func(ctx context.Context, p string) error {
			rw, err := rwlock.New(s, p)
			require.NoError(t, err)
			_, err = rw.ReadLock().Acquire(ctx)
			return err
		},
		"write try": func(ctx context.Context, p string) error {
			rw, err := rwlock.New(s, p)
			require.NoError(t, err)
			_, _, err = rw.WriteLock().TryAcquire(ctx)
			return err
		},
		"multilock": func(ctx context.Context, p string) error {
			a, err := mutex.New(s, p+"/a")
			require.NoError(t, err)
			b, err := exclusive.New(s, p+"/b")
			require.NoError(t, err)
			ml, err := multilock.New(a, b)
			require.NoError(t, err)
			_, err = ml.Acquire(ctx)
			return err
		},
	}
	i := 0
	for lname, acq := range lockers {
		for bname, label := range bad {
			i++
			path := f.Path("bad" + string(rune('a'+i%26)) + strings.Repeat("x", i/26))
			ctx := lock.WithLabel(ctxT(t, 10*time.Second), label)
			err := acq(ctx, path)
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
	m, err := mutex.New(s, f.Path("long"))
	require.NoError(t, err)
	_, err = m.Acquire(lock.WithLabel(ctxT(t, 10*time.Second), long))
	require.NoError(t, err)
	ps, err := m.Participants(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.Equal(t, long, ps[0].Label)
	require.NoError(t, m.Release(ctxT(t, 10*time.Second)))
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
	for i, label := range labels {
		path := f.Path("syn" + string(rune('a'+i)))
		m, err := mutex.New(s, path)
		require.NoError(t, err)
		_, err = m.Acquire(lock.WithLabel(ctxT(t, 10*time.Second), label))
		require.NoError(t, err, label)
		ps, err := m.Participants(ctxT(t, 10*time.Second))
		require.NoError(t, err)
		require.Len(t, ps, 1)
		host, _ := os.Hostname()
		require.Equal(t, label, ps[0].Label, "label read back")
		require.True(t, ps[0].Known, "known")
		require.Equal(t, os.Getpid(), ps[0].PID, "pid of %q", label)
		require.Equal(t, host, ps[0].Host, "host of %q", label)

		bin := zkrecipesBin(t)
		if bin == "" {
			continue
		}
		out, err := exec.Command(bin, "-servers", strings.Join(f.Servers(), ","), "-json", "locks", path).Output()
		require.NoError(t, err, "zkrecipes locks: %s", out)
		var doc struct {
			Queues []struct {
				Nodes []struct {
					Status string
					Owner  struct {
						Client, Host, Label string
						PID                 int
					}
				}
			}
		}
		require.NoError(t, json.Unmarshal(out, &doc), "%s", out)
		require.Len(t, doc.Queues, 1, "%s", out)
		require.Len(t, doc.Queues[0].Nodes, 1, "%s", out)
		o := doc.Queues[0].Nodes[0].Owner
		require.Equal(t, label, o.Label, "zkrecipes label: %s", out)
		require.Equal(t, os.Getpid(), o.PID, "zkrecipes pid: %s", out)
		require.Equal(t, host, o.Host, "zkrecipes host: %s", out)
	}
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

// TestLabelKeptAcrossLocalHandoffAndReentry: a local handoff and a
// re-entry keep the label of the acquire that created the node, and the
// handoff's Fence is above the first grant's.
func TestLabelKeptAcrossLocalHandoffAndReentry(t *testing.T) {
	f := newFixture(t)
	s := f.Session()
	path := f.Path("handoff")
	ctx := ctxT(t, 30*time.Second)
	a, err := mutex.New(s, path, lock.WithLocalHandoff(3, 0))
	require.NoError(t, err)
	b, err := mutex.New(s, path, lock.WithLocalHandoff(3, 0))
	require.NoError(t, err)
	la, err := a.Acquire(lock.WithLabel(ctx, "creator"))
	require.NoError(t, err)
	fa, err := la.Fence(ctx)
	require.NoError(t, err)
	// re-entry with another label
	_, err = a.Acquire(lock.WithLabel(ctx, "reentry"))
	require.NoError(t, err)
	labelIs := func(want string) {
		t.Helper()
		ps, err := a.Participants(ctx)
		require.NoError(t, err)
		require.Len(t, ps, 1)
		require.Equal(t, want, ps[0].Label)
	}
	labelIs("creator")
	require.NoError(t, a.Release(ctx))
	hb := hold(lock.WithLabel(ctx, "second"), b)
	hb.notGranted(t, 300*time.Millisecond, "b granted while a holds")
	require.NoError(t, a.Release(ctx))
	lb := hb.wait(t, 10*time.Second, "b")
	labelIs("creator")
	fb, err := lb.Fence(ctx)
	require.NoError(t, err)
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
	m, err := mutex.New(s, path, lock.WithRevocable())
	require.NoError(t, err)
	l, err := m.Acquire(lock.WithLabel(ctx, "job-7"))
	require.NoError(t, err)
	ps, err := m.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.Equal(t, "job-7", ps[0].Label)
	sO := f.Session()
	other, err := mutex.New(sO, path, lock.WithRevocable())
	require.NoError(t, err)
	require.NoError(t, lock.Revoke(ctx, sO, ps[0].Node))
	select {
	case <-l.Revoked():
	case <-time.After(10 * time.Second):
		t.Fatal("Revoked did not close")
	}
	ps2, err := other.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps2, 1)
	t.Logf("after Revoke: %+v", ps2[0])
	require.True(t, ps2[0].Holding)
	if ps2[0].Known || ps2[0].Host != "" || ps2[0].Label != "" {
		t.Errorf("after Revoke, Participant says Known=%v Host=%q Label=%q: the revoke mark read as an owner", ps2[0].Known, ps2[0].Host, ps2[0].Label)
	}
	if ps2[0].ID != ps[0].ID || ps[0].ID == "" {
		t.Errorf("after Revoke, Participant.ID = %q, want the uuid in the name %q", ps2[0].ID, ps[0].ID)
	}
	if bin := zkrecipesBin(t); bin != "" {
		out, err := exec.Command(bin, "-servers", strings.Join(f.Servers(), ","), "locks", path).CombinedOutput()
		require.NoError(t, err, "%s", out)
		t.Logf("zkrecipes locks after Revoke:\n%s", out)
		if strings.Contains(string(out), "address=__REVOKE__") {
			t.Errorf("zkrecipes locks names the revoke mark as a Curator address (docs/operations.md: `curator address=` for a node whose data is an IP address)")
		}
		if !strings.Contains(string(out), "revoke requested") || !strings.Contains(string(out), ps[0].ID) {
			t.Errorf("zkrecipes locks does not say the revoke of %s was requested", ps[0].ID)
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
	f := newFixture(t)
	ctx := ctxT(t, 30*time.Second)
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
	rw1, err := rwlock.New(s1, f.Path("rw"))
	require.NoError(t, err)
	_, ok, err := rw1.ReadLock().TryAcquire(lock.WithLabel(ctx, "reader"))
	require.NoError(t, err)
	require.True(t, ok)
	rw2, err := rwlock.New(s2, f.Path("rw"))
	require.NoError(t, err)
	hw := hold(lock.WithLabel(wctx, "writer"), rw2.WriteLock())
	hw.notGranted(t, 200*time.Millisecond, "writer granted beside a reader")

	bin := zkrecipesBin(t)
	if bin == "" {
		t.Skip("no zkrecipes binary")
	}
	out, err := exec.Command(bin, "-servers", strings.Join(f.Servers(), ","), "-json", "locks", f.Root()).Output()
	require.NoError(t, err, "%s", out)
	var doc struct {
		Queues []struct {
			Path, Recipe string
			Nodes        []struct {
				Name, Kind, Status string
				Owner              struct{ Client, Label string }
			}
		}
	}
	require.NoError(t, json.Unmarshal(out, &doc), "%s", out)
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
	data, _, err := f.Raw().Get(f.Path("ml/b/lock"))
	require.NoError(t, err)
	require.Contains(t, string(data), "multi", "the exclusive lock's node data")
}

// TestForgedLabelWithControlCharsNotPrintedRaw: WithLabel refuses control
// characters, but a bystander can queue a node named and filled like ours
// whose label holds a terminal escape sequence. `zkrecipes locks` prints
// what the node's data says: it must not write the escape byte to the
// operator's terminal.
func TestForgedLabelWithControlCharsNotPrintedRaw(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 30*time.Second)
	path := f.Path("forged")
	m, err := mutex.New(f.Session(), path)
	require.NoError(t, err)
	l, err := m.Acquire(lock.WithLabel(ctx, "LABELMARK"))
	require.NoError(t, err)
	data, _, err := f.Raw().Get(l.Path())
	require.NoError(t, err)
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
	bin := zkrecipesBin(t)
	if bin == "" {
		t.Skip("no zkrecipes binary")
	}
	out, err := exec.Command(bin, "-servers", strings.Join(f.Servers(), ","), "locks", path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Logf("zkrecipes locks:\n%q", out)
	require.NotContains(t, string(out), "\x1b", "zkrecipes locks writes a forged label's escape byte to the terminal")
	require.NoError(t, m.Release(ctx))
}

var zkWorld = zk.WorldACL(zk.PermAll)

const zkEphemeralSequential = zk.FlagEphemeral | zk.FlagSequence

// TestParticipantIDIsTheUUIDInTheName checks lock.Participant's "ID is
// the contender's id: for a lock, its unique acquire id (the uuid in the
// name)": a bystander queues a node named with one uuid whose data is a
// copy of our holder's (another id, host, pid, label). Participants and
// `zkrecipes locks -json` must give it the uuid of its name, not our
// holder's id: two contenders with one id is what an operator cannot
// untangle.
func TestParticipantIDIsTheUUIDInTheName(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 30*time.Second)
	path := f.Path("idname")
	m, err := mutex.New(f.Session(), path)
	require.NoError(t, err)
	l, err := m.Acquire(lock.WithLabel(ctx, "holder"))
	require.NoError(t, err)
	data, _, err := f.Raw().Get(l.Path())
	require.NoError(t, err)
	const forgedUUID = "00000000-0000-4000-8000-000000000000"
	_, err = f.Raw().Create(path+"/_c_"+forgedUUID+"-lock-", data, zkEphemeralSequential, zkWorld)
	require.NoError(t, err)
	ps, err := m.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 2)
	holderID := strings.TrimPrefix(zkpath.Base(l.Path()), "_c_")[:36]
	require.Equal(t, holderID, ps[0].ID, "the holder's ID")
	if ps[1].ID != forgedUUID {
		t.Errorf("Participant.ID of node %s = %q, want the uuid in its name %q (the holder's id is %q)", zkpath.Base(ps[1].Node), ps[1].ID, forgedUUID, holderID)
	}
	if bin := zkrecipesBin(t); bin != "" {
		out, err := exec.Command(bin, "-servers", strings.Join(f.Servers(), ","), "-json", "locks", path).Output()
		require.NoError(t, err, "%s", out)
		var doc struct {
			Queues []struct {
				Nodes []struct {
					Name  string
					Owner struct{ ID string }
				}
			}
		}
		require.NoError(t, json.Unmarshal(out, &doc), "%s", out)
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
	f := newFixture(t)
	ctx := ctxT(t, 30*time.Second)
	s := f.Session()
	path := f.Path("inv")
	a, err := mutex.New(s, path, lock.WithLocalHandoff(3, 0))
	require.NoError(t, err)
	_, err = a.Acquire(lock.WithLabel(ctx, "ok"))
	require.NoError(t, err)
	bad := lock.WithLabel(ctx, "bad\n")
	_, err = a.Acquire(bad)
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
	bctx, cancel := context.WithTimeout(bad, 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err = b.Acquire(bctx)
	took := time.Since(start)
	t.Logf("local waiter with an invalid label: %v after %v", err, took)
	require.ErrorIs(t, err, conn.ErrInvalidArgument, "a local waiter with an invalid label")
	require.Less(t, took, time.Second, "refused at once, not after waiting")
	require.NoError(t, a.Release(ctx))

	// The same for an rwlock's re-entry and for a semaphore mutex whose
	// handle is held (its Acquire would wait for the handle's release).
	rw, err := rwlock.New(s, f.Path("inv-rw"))
	require.NoError(t, err)
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
	smctx, smcancel := context.WithTimeout(bad, 2*time.Second)
	defer smcancel()
	_, err = sm.Acquire(smctx)
	require.ErrorIs(t, err, conn.ErrInvalidArgument, "semaphore mutex held by its handle, invalid label")
	require.NoError(t, sm.Release(ctx))
}

// TestRevokeMarkNotReadAsOwnerInEveryRecipe is TestLabelSurvivesRevokeRequest
// for a writer of rwlock and a semaphore lease: after Revoke, the revoked
// holder's Participant must not name "__REVOKE__" as its host (lock.Participant:
// "Host and PID say which process queued it, when its data tells (Curator
// writes only an address, which becomes Host)"); the mark replaced the label.
func TestRevokeMarkNotReadAsOwnerInEveryRecipe(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 30*time.Second)
	type parts func(context.Context) ([]lock.Participant, error)
	check := func(name string, l *conn.Lease, p parts, revoke func(string) error) {
		require.NoError(t, revoke(l.Path()), name)
		select {
		case <-l.Revoked():
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: Revoked not closed", name)
		}
		ps, err := p(ctx)
		require.NoError(t, err)
		for _, x := range ps {
			if x.Node == l.Path() {
				t.Logf("%s after Revoke: %+v", name, x)
				if x.Known || x.Host != "" || x.PID != 0 || x.Label != "" {
					t.Errorf("%s: after Revoke Participant says Known=%v Host=%q PID=%d Label=%q: the revoke mark read as an owner", name, x.Known, x.Host, x.PID, x.Label)
				}
				if strings.Contains(x.Node, "/_c_") && !strings.Contains(x.Node, x.ID) || x.ID == "__REVOKE__" {
					t.Errorf("%s: after Revoke Participant.ID = %q, not the uuid in the name of %s", name, x.ID, x.Node)
				}
			}
		}
	}
	sRW := f.Session()
	rw, err := rwlock.New(sRW, f.Path("rw"), lock.WithRevocable())
	require.NoError(t, err)
	wl, err := rw.WriteLock().Acquire(lock.WithLabel(ctx, "lbl"))
	require.NoError(t, err)
	check("rwlock writer", wl, rw.Participants, func(n string) error { return lock.Revoke(ctx, sRW, n) })
	sSem := f.Session()
	sem, err := semaphoremutex.NewSemaphore(sSem, f.Path("sem"), 2, lock.WithRevocable())
	require.NoError(t, err)
	sl, err := sem.Acquire(lock.WithLabel(ctx, "lbl"))
	require.NoError(t, err)
	check("semaphore lease", sl, sem.Participants, func(n string) error { return lock.Revoke(ctx, sSem, n) })
}
