package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// run tells the story against servers, on stdout-like out; it fails if the
// ephemeral node outlives its session.
func run(ctx context.Context, servers []string, out io.Writer) error {
	fmt.Fprintf(out, "ZooKeeper at %v\n", servers)

	sess, err := conn.Connect(ctx, servers, conn.WithSessionTimeout(4*time.Second))
	if err != nil {
		return err
	}
	defer sess.Close()
	subCtx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the subscription
	sub := sess.Subscribe(subCtx)

	// An epoch (one ZooKeeper session) shows through what was done in it:
	// a lease taken in it (Lease.Epoch), or the transition that began it
	// (Event.Epoch).
	base := fmt.Sprintf("/zkrecipes-examples-session-%x", time.Now().UnixNano())
	lockPath := base + "-lock"
	m, err := mutex.New(sess, lockPath)
	if err != nil {
		return err
	}
	lease, err := m.Acquire(ctx)
	if err != nil {
		return err
	}
	ep := lease.Epoch()
	fmt.Fprintf(out, "epoch 1: session 0x%x (holds the lock %s)\n", ep.SessionID(), lockPath)
	node := base + "-hello"
	if _, err := sess.Create(ctx, node, []byte("hi"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		return err
	}
	fmt.Fprintf(out, "created ephemeral %s\n", node)

	fmt.Fprintln(out, "asking the server to expire the session...")
	if err := zktest.ExpireEpoch(ctx, servers[0], ep); err != nil {
		return err
	}
	var ep2 *conn.Epoch
	for ep2 == nil {
		ev, ok := <-sub
		if !ok {
			return fmt.Errorf("waiting for a new session: %w", ctx.Err())
		}
		fmt.Fprintf(out, "transition: %v\n", ev.State)
		if ev.State == conn.Connected {
			ep2 = ev.Epoch
		}
	}
	<-ep.Done()
	fmt.Fprintf(out, "epoch 1 ended: %v\n", ep.Err())
	<-lease.Lost()
	fmt.Fprintf(out, "the lock's lease ended with it: %v\n", lease.Err())

	ok, _, err := sess.Exists(ctx, node)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "epoch 2: session 0x%x; %s exists: %v\n", ep2.SessionID(), node, ok)
	if ok {
		return fmt.Errorf("the ephemeral node outlived its session")
	}
	return nil
}
