package zktest_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/zktest"
)

const orphanHelperEnv = "ZKTEST_ORPHAN_HELPER"

// TestOrphanHelper is not a test: TestNoOrphans runs it in a child test
// binary that starts a cluster, prints its address and waits to be killed.
func TestOrphanHelper(t *testing.T) {
	b := os.Getenv(orphanHelperEnv)
	if b == "" {
		t.Skip("helper process for TestNoOrphans")
	}
	c, err := zktest.Start(context.Background(), zktest.WithBackend(zktest.Backend(b)))
	if err != nil {
		fmt.Printf("UNAVAILABLE %v\n", err)
		os.Exit(0)
	}
	fmt.Printf("SERVER %s\n", c.Servers()[0])
	select {} // until killed
}

// TestNoOrphans kills (SIGKILL) a test binary that runs a cluster: a local
// server dies with it. (Containers: the module zktest/docker's TestNoOrphans.)
func TestNoOrphans(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestOrphanHelper$")
			cmd.Env = append(os.Environ(), orphanHelperEnv+"="+string(b))
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Wait()
			defer cmd.Process.Kill()

			var addr string
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				line := sc.Text()
				if rest, ok := strings.CutPrefix(line, "SERVER "); ok {
					addr = rest
					break
				}
				if strings.HasPrefix(line, "UNAVAILABLE ") {
					_, err := zktest.Start(context.Background(), zktest.WithBackend(b))
					zktest.RequireOrSkip(t, err)
					t.Fatalf("helper: %s", line)
				}
			}
			if addr == "" {
				t.Fatalf("helper printed no address (scan: %v)", sc.Err())
			}
			if _, err := srvr(addr, 5*time.Second); err != nil {
				t.Fatalf("helper's server does not answer: %v", err)
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()

			deadline := time.Now().Add(10 * time.Second)
			for {
				_, err := srvr(addr, time.Second)
				if err != nil {
					return // gone
				}
				if time.Now().After(deadline) {
					t.Fatalf("the server of the killed test binary still answers on %s", addr)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}
