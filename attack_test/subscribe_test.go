package attack_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe_SubscribeNeverDropsUnderCutsAndExpiry checks conn/doc.go:
// "Subscribe gives every transition in order, never dropping one, however
// slowly it is read": one subscription is read as events come, another is
// not read at all while the proxy cuts the connection 8 times and the
// server expires the session twice; then the second must hold exactly the
// same events, in the same order.
func TestProbe_SubscribeNeverDropsUnderCutsAndExpiry(t *testing.T) {
	c := zktest.New(t)
	ctx := ctxT(t, 28*time.Second)
	px := zktest.NewProxy(t, c.Servers())
	// The last-heard timer: a cut must bring the same session back
	// (Reconnected) however long go-zookeeper takes to redial; the quorum
	// timer may end the epoch first when the redial takes longer than about
	// T/3 (conn's "The local timer").
	s := session(t, px.Addrs(), conn.WithLastHeardTimer())
	live := s.Subscribe()
	defer live.Close()
	slow := s.Subscribe()
	defer slow.Close()
	var seen []conn.Event
	wait := func(st conn.State) {
		t.Helper()
		for {
			ev, err := live.Next(ctx)
			if err != nil {
				t.Fatalf("waiting for %v: %v (seen %v)", st, err, seen)
			}
			seen = append(seen, ev)
			if ev.State == st {
				return
			}
		}
	}
	for round := 0; round < 2; round++ {
		for i := 0; i < 4; i++ {
			px.Cut()
			wait(conn.Reconnected)
		}
		ep, err := s.Epoch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := zktest.ExpireEpoch(ctx, c.Servers()[0], ep); err != nil {
			t.Fatal(err)
		}
		wait(conn.Connected)
	}
	for i, want := range seen {
		nctx, cancel := context.WithTimeout(ctx, time.Second)
		got, err := slow.Next(nctx)
		cancel()
		if err != nil {
			t.Fatalf("slow subscription: event %d: %v (want %v)", i, err, want)
		}
		if got.State != want.State || got.Epoch != want.Epoch {
			t.Fatalf("slow subscription: event %d is %v, the live one saw %v", i, got, want)
		}
	}
	t.Logf("%d events, the same on both subscriptions", len(seen))
}
