package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// Exit codes (see the package documentation).
const (
	exitOK       = 0
	exitError    = 1 // anything else: a server error, a bug
	exitUsage    = 2
	exitNoPath   = 3
	exitNoServer = 4
	exitAuth     = 5
)

const usage = `usage: zkrecipes [flags] locks PATH    every lock queue under PATH: holders first, then waiters
       zkrecipes [flags] leader PATH   the leader and followers of the LeaderLatch election at PATH

Each node: status (holds, next, waits, kept: a write node kept for a
downgrade's read lock; leads, follows), kind (mutex, read, write, semaphore
lease, semaphore lock, leader), name, session id (the node's
ephemeralOwner), age (from its ctime) and the owner its data names
(zkrecipes host/pid/id and label= the acquire's label, Curator's address,
kazoo's identifier, a LeaderLatch participant id, "revoke requested" for a
holder asked to release, whose data no longer names it, or unknown).

flags (before or after the command):
`

const exitHelp = `
exit status:
  0  ok (also: no lock under PATH, no leader)
  1  any other error
  2  bad usage (-h: 0; also: leader on a PATH that holds a lock's nodes)
  3  no such path
  4  no server reachable (within -timeout)
  5  authentication refused (ZooKeeper answered NOAUTH or AUTH_FAILED: see -auth)

environment:
  ZK_SERVERS=host:port,...   the servers when -servers is not given (default 127.0.0.1:2181)
  ZK_NAMESPACE=/ns           the namespace (chroot) when -namespace is not given
  ZK_AUTH=user:password      digest credentials when -auth is not given
`

// options are the parsed command line.
type options struct {
	servers        string
	namespace      string
	auth           string
	json           bool
	watch          bool
	timeout        time.Duration
	sessionTimeout time.Duration
	cmd, path      string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, isTerminal(os.Stdout))
	stop()
	os.Exit(code)
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// parse reads the command line; flags may come before and after the
// command and its path.
func parse(args []string, stderr io.Writer) (options, int, bool) {
	var o options
	fs := flag.NewFlagSet("zkrecipes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	// The environment is read after parsing, so that -h never prints it
	// (ZK_AUTH holds a password).
	fs.StringVar(&o.servers, "servers", "", "ZooKeeper servers `host:port,...` (default: ZK_SERVERS, else 127.0.0.1:2181)")
	fs.StringVar(&o.namespace, "namespace", "", "namespace (chroot) `/ns` every path is under (default: ZK_NAMESPACE)")
	fs.StringVar(&o.auth, "auth", "", "digest credentials `user:password` (default: ZK_AUTH, which, unlike a flag, ps does not show)")
	fs.BoolVar(&o.json, "json", false, "print JSON (with -watch: one document per line, per change)")
	fs.BoolVar(&o.watch, "watch", false, "keep the view live, driven by watches; Ctrl-C ends it")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "give up when no server answers within this")
	fs.DurationVar(&o.sessionTimeout, "session-timeout", 10*time.Second, "the ZooKeeper session timeout to ask for (-watch: how long a cut may last before the session counts as lost)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), exitHelp)
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return o, exitOK, false
			}
			return o, exitUsage, false
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) != 2 || (pos[0] != "locks" && pos[0] != "leader") {
		fmt.Fprintf(stderr, "zkrecipes: want a command (locks or leader) and a PATH, got %q\n\n", pos)
		fs.Usage()
		return o, exitUsage, false
	}
	o.cmd, o.path = pos[0], pos[1]
	for _, f := range []struct {
		v   *string
		env string
	}{{&o.servers, "ZK_SERVERS"}, {&o.namespace, "ZK_NAMESPACE"}, {&o.auth, "ZK_AUTH"}} {
		if *f.v == "" {
			*f.v = os.Getenv(f.env)
		}
	}
	if err := zkpath.Validate(o.path); err != nil {
		fmt.Fprintf(stderr, "zkrecipes: %v\n", err)
		return o, exitUsage, false
	}
	if o.auth != "" && !strings.Contains(o.auth, ":") {
		fmt.Fprintln(stderr, "zkrecipes: -auth wants user:password")
		return o, exitUsage, false
	}
	return o, exitOK, true
}

// errNoServer is the cause of a connect cut by -timeout.
var errNoServer = errors.New("no server reachable within -timeout")

// run is the command: it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, tty bool) int {
	o, code, ok := parse(args, stderr)
	if !ok {
		return code
	}
	servers := o.servers
	if servers == "" {
		servers = "127.0.0.1:2181"
	}
	// The viewer holds nothing, so the quorum timer's margin buys it
	// nothing: the last-heard timer sends no syncs and keeps the session
	// through a blip (the view says suspended, then reconnected).
	opts := []conn.Option{conn.WithSessionTimeout(o.sessionTimeout), conn.WithLastHeardTimer()}
	if o.namespace != "" {
		opts = append(opts, conn.WithNamespace(o.namespace))
	}
	if o.auth != "" {
		user, pass, _ := strings.Cut(o.auth, ":")
		opts = append(opts, conn.WithDigestAuth(user, pass))
	}
	cctx, cancel := context.WithTimeoutCause(ctx, o.timeout, errNoServer)
	sess, err := conn.Connect(cctx, strings.Split(servers, ","), opts...)
	cancel()
	if err != nil {
		return fail(stderr, fmt.Errorf("connect to %s: %w", servers, err))
	}
	defer sess.Close()
	if o.watch {
		err = watch(ctx, sess, o, stdout, tty)
	} else {
		err = once(ctx, sess, o, stdout)
	}
	if err != nil && ctx.Err() == nil {
		return fail(stderr, err)
	}
	return exitOK
}

// once prints the view once.
func once(ctx context.Context, sess *conn.Session, o options, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout+o.sessionTimeout)
	defer cancel()
	ep, err := connlink.Of(sess).Epoch(ctx)
	if err != nil {
		return err
	}
	qs, err := (&scanner{ep: ep, leader: o.cmd == "leader"}).scan(ctx, o.path)
	if err != nil {
		return err
	}
	return show(stdout, o, qs, time.Now())
}

// show prints qs as o asks.
func show(w io.Writer, o options, qs []Queue, now time.Time) error {
	if o.cmd == "leader" {
		v := leaderView(o.path, qs)
		if o.json {
			return writeJSON(w, v, !o.watch)
		}
		writeLeader(w, v, now)
		return nil
	}
	if qs == nil {
		qs = []Queue{}
	}
	v := LocksView{Path: o.path, Queues: qs}
	if o.json {
		return writeJSON(w, v, !o.watch)
	}
	writeLocks(w, v, now)
	return nil
}

// fail prints err and returns its exit status.
func fail(stderr io.Writer, err error) int {
	fmt.Fprintln(stderr, "zkrecipes:", err)
	switch {
	case errors.Is(err, errNoPath):
		return exitNoPath
	case errors.Is(err, zk.ErrNoAuth), errors.Is(err, zk.ErrAuthFailed):
		return exitAuth
	case errors.Is(err, errNoServer):
		return exitNoServer
	case errors.Is(err, conn.ErrInvalidArgument), errors.Is(err, errOtherRecipe):
		return exitUsage
	}
	return exitError
}
