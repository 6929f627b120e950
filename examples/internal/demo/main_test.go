package demo

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/zktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestStartSaysWhich: the first line an example prints says which
// ZooKeeper it uses: the one it started (docker image or local install,
// with its address), ZK_SERVERS, or -servers.
func TestStartSaysWhich(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Setenv("ZK_SERVERS", "")
	var log bytes.Buffer
	servers, stop, err := Start(ctx, nil, &log)
	zktest.RequireOrSkip(t, err)
	defer stop()
	first, _, _ := strings.Cut(log.String(), "\n")
	started := regexp.MustCompile(`^ZooKeeper: (docker image \S+|local install at \S+ \(java \S+\)), started for this run at ` +
		regexp.QuoteMeta(strings.Join(servers, ",")) + ` \(set ZK_SERVERS to use yours; -h for more\)$`)
	if !started.MatchString(first) {
		t.Errorf("first line %q, want it to match %s", first, started)
	}

	t.Setenv("ZK_BACKEND", "")
	t.Setenv("ZK_SERVERS", strings.Join(servers, ","))
	log.Reset()
	_, stopExternal, err := Start(ctx, nil, &log)
	if err != nil {
		t.Fatal(err)
	}
	stopExternal()
	if want := "ZooKeeper: external ZK_SERVERS=" + strings.Join(servers, ",") + "\n"; log.String() != want {
		t.Errorf("with ZK_SERVERS: %q, want %q", log.String(), want)
	}

	log.Reset()
	if _, _, err := Start(ctx, []string{"zk1:2181", "zk2:2181"}, &log); err != nil {
		t.Fatal(err)
	}
	if want := "ZooKeeper: external -servers zk1:2181,zk2:2181\n"; log.String() != want {
		t.Errorf("with -servers: %q, want %q", log.String(), want)
	}
}
