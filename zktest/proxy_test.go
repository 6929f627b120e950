package zktest_test

import (
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/zktest"
)

func TestProxyForwardAndLatency(t *testing.T) {
	c := anyCluster(t)
	p := zktest.NewProxy(t, c.Servers())
	addr := p.Addrs()[0]
	if out, err := srvr(addr, 5*time.Second); err != nil || !strings.Contains(out, "Mode:") {
		t.Fatalf("srvr through proxy = %q, %v", out, err)
	}

	const d = 150 * time.Millisecond
	p.SetLatency(d)
	begin := time.Now()
	if out, err := srvr(addr, 5*time.Second); err != nil || !strings.Contains(out, "Mode:") {
		t.Fatalf("srvr with latency = %q, %v", out, err)
	}
	// The request and the response are each delayed.
	if took := time.Since(begin); took < 2*d {
		t.Fatalf("srvr with latency %v took %v, want ≥ %v", d, took, 2*d)
	}
	p.SetLatency(0)
	begin = time.Now()
	if _, err := srvr(addr, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took >= d {
		t.Errorf("srvr without latency took %v", took)
	}
}

func TestProxyCut(t *testing.T) {
	c := anyCluster(t)
	p := zktest.NewProxy(t, c.Servers())
	conn, ev := connect(t, p.Addrs(), 4*time.Second, nil)
	sid := conn.SessionID()

	p.Cut()
	ev.waitFor(t, zk.StateDisconnected, 1, 5*time.Second)
	ev.waitFor(t, zk.StateHasSession, 2, 10*time.Second)
	if conn.SessionID() != sid {
		t.Fatalf("session changed across a cut: 0x%x -> 0x%x", sid, conn.SessionID())
	}
	if _, err := conn.Sync("/"); err != nil {
		t.Fatalf("request after cut: %v", err)
	}
}

func TestProxyBlackholeHeal(t *testing.T) {
	c := anyCluster(t)
	p := zktest.NewProxy(t, c.Servers())
	addr := p.Addrs()[0]

	old, err := net.Dial("tcp", addr) // open before the blackhole
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()

	p.Blackhole()
	if _, err := old.Write([]byte("srvr")); err != nil {
		t.Fatal(err)
	}
	_ = old.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if n, err := old.Read(make([]byte, 64)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blackholed connection: read %d bytes, %v; want a timeout", n, err)
	}
	if out, err := srvr(addr, 500*time.Millisecond); err == nil {
		t.Fatalf("new connection during blackhole answered: %q", out)
	}

	p.Heal()
	_ = old.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := old.Read(make([]byte, 64)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blackholed connection after heal: read %d bytes, %v; want it closed", n, err)
	}
	if out, err := srvr(addr, 5*time.Second); err != nil || !strings.Contains(out, "Mode:") {
		t.Fatalf("srvr after heal = %q, %v", out, err)
	}
}

// TestProxyBlackholeClient: a go-zookeeper client behind a blackhole loses
// its connection by its own read timeout and, healed in time, gets its
// session back.
func TestProxyBlackholeClient(t *testing.T) {
	c := anyCluster(t)
	p := zktest.NewProxy(t, c.Servers())
	conn, ev := connect(t, p.Addrs(), 4*time.Second, nil)
	sid := conn.SessionID()

	begin := time.Now()
	p.Blackhole()
	ev.waitFor(t, zk.StateDisconnected, 1, 6*time.Second)
	t.Logf("client disconnected %v after the blackhole", time.Since(begin).Round(time.Millisecond))
	p.Heal()
	ev.waitFor(t, zk.StateHasSession, 2, 10*time.Second)
	if conn.SessionID() != sid {
		t.Fatalf("session changed: 0x%x -> 0x%x", sid, conn.SessionID())
	}
}

// TestProxyCutAfterNextWrite: the create is executed, its response is lost.
func TestProxyCutAfterNextWrite(t *testing.T) {
	c := anyCluster(t)
	direct, _ := connect(t, c.Servers(), 4*time.Second, nil)
	if _, err := direct.Create(c.Root(), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	p := zktest.NewProxy(t, c.Servers())
	conn, ev := connect(t, p.Addrs(), 10*time.Second, nil)

	path := c.Root() + "/lost-response"
	p.CutAfterNextWrite()
	if _, err := conn.Create(path, []byte("x"), 0, zk.WorldACL(zk.PermAll)); err == nil {
		t.Fatal("create through CutAfterNextWrite returned its response")
	} else {
		t.Logf("create error: %v", err)
	}
	ok, _, err := direct.Exists(path)
	if err != nil || !ok {
		t.Fatalf("the create did not reach the server: exists = %v, %v", ok, err)
	}
	// One-shot: the client reconnects and works normally.
	ev.waitFor(t, zk.StateHasSession, 2, 10*time.Second)
	if _, _, err := conn.Get(path); err != nil {
		t.Fatalf("get after the cut: %v", err)
	}
}

func TestProxyClose(t *testing.T) {
	c := anyCluster(t)
	p, err := zktest.StartProxy(c.Servers())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", p.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	p.Close()
	p.Close() // idempotent
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection after Close: %v, want closed", err)
	}
	if _, err := net.DialTimeout("tcp", p.Addrs()[0], time.Second); err == nil {
		t.Fatal("proxy still accepts after Close")
	}
}
