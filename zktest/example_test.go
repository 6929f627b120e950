package zktest_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// Start outside of a test, e.g. in an example program; in a test, New
// does the same and stops the cluster in t.Cleanup.
func ExampleStart() {
	c, err := zktest.Start(context.Background())
	if err != nil {
		log.Fatal(err) // says what to install
	}
	defer c.Stop()
	conn, _, err := zk.Connect(c.Servers(), 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	path, err := conn.Create(c.Root(), nil, 0, zk.WorldACL(zk.PermAll))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.HasPrefix(path, "/zktest-")) // Root is unique per cluster
	// Output: true
}

// A server killed (SIGKILL) and restarted with the same port and data.
func ExampleCluster_Kill() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := zktest.Start(ctx) // zktest.WithServers(3) for an ensemble; see Leader
	if err != nil {
		log.Fatal(err)
	}
	defer c.Stop()
	if err := c.Kill(0); err != nil {
		log.Fatal(err)
	}
	_, err = zktest.FourLetterAt(ctx, c.Servers()[0], "ruok")
	fmt.Println("killed, answers:", err == nil)
	if err := c.Restart(0); err != nil { // returns once it answers
		log.Fatal(err)
	}
	ok, err := zktest.FourLetterAt(ctx, c.Servers()[0], "ruok")
	fmt.Println("restarted, answers:", ok)
	// Output:
	// killed, answers: false
	// restarted, answers: imok
}

// A client whose create succeeds on the server but whose answer is lost.
func ExampleProxy_CutAfterNextWrite() {
	c, err := zktest.Start(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Stop()
	p, err := zktest.StartProxy(c.Servers())
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	conn, events, err := zk.Connect(p.Addrs(), 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	for ev := range events { // the session is established
		if ev.State == zk.StateHasSession {
			break
		}
	}
	p.CutAfterNextWrite()
	_, err = conn.Create(c.Root(), nil, 0, zk.WorldACL(zk.PermAll))
	fmt.Println("create failed:", err != nil)

	direct, _, err := zk.Connect(c.Servers(), 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		log.Fatal(err)
	}
	defer direct.Close()
	exists, _, err := direct.Exists(c.Root())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("node exists:", exists)
	// Output:
	// create failed: true
	// node exists: true
}

// In a test of a program whose go.mod replaces go-zookeeper (its Connect
// passes conn.WithPatchedZK): does the copy keep what conn relies on?
func ExampleCheckWire() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := zktest.Start(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Stop()
	err = zktest.CheckWire(ctx, c.Servers(), conn.WithNamespace(c.Root()))
	fmt.Println("the copy keeps it:", err == nil) // an error matching conn.ErrZKVersion lists what breaks
	// Output: the copy keeps it: true
}
