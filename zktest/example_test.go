package zktest_test

import (
	"context"
	"fmt"
	"log"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// Start outside of a test, e.g. in an example program.
func ExampleStart() {
	c, err := zktest.Start(context.Background())
	if err != nil {
		log.Fatal(err) // says what to install
	}
	defer c.Stop()
	conn, _, err := zk.Connect(c.Servers(), 5*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	fmt.Println("lock path:", c.Root()+"/lock")
}

// A three-server ensemble losing its leader.
func ExampleCluster_Kill() {
	var t *testing.T // the test's t
	c := zktest.New(t, zktest.WithServers(3))
	leader, err := c.Leader()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitServing(ctx); err != nil { // a new leader is elected
		t.Fatal(err)
	}
	if err := c.Restart(leader); err != nil { // back as a follower
		t.Fatal(err)
	}
}

// A client whose create succeeds on the server but whose response is lost.
func ExampleProxy_CutAfterNextWrite() {
	var t *testing.T // the test's t
	c := zktest.New(t)
	p := zktest.NewProxy(t, c.Servers())
	conn, _, err := zk.Connect(p.Addrs(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	p.CutAfterNextWrite()
	_, err = conn.Create(c.Root(), nil, 0, zk.WorldACL(zk.PermAll))
	fmt.Println(err) // zk: connection closed, yet the node exists
}
