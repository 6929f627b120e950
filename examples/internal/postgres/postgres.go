// Package postgres starts a throwaway PostgreSQL server for an example or
// a test: a cluster made by initdb in a temporary directory, listening on a
// free loopback port, with trust authentication, removed by stop.
//
// It uses Debian's postgresql package (/usr/lib/postgresql/N/bin, the
// highest N) or initdb and pg_ctl from PATH. PostgreSQL refuses to run as
// root: as root, it runs them as the user postgres (the package creates
// it) with runuser.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// ErrMissing: no PostgreSQL server programs were found.
var ErrMissing = errors.New("postgres: no PostgreSQL server (initdb, pg_ctl) found: install Debian's postgresql package (scripts/prereqs.sh does)")

// Start starts a server and returns its DSN and the function that stops it
// and removes its files. A failed start says why, with the server's log.
func Start(ctx context.Context) (dsn string, stop func(), err error) {
	bin, err := binDir()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "zkrecipes-pg-")
	if err != nil {
		return "", nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	var as []string // the command prefix that runs a program as the server's user
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return "", nil, fmt.Errorf("postgres: running as root needs the user postgres: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return "", nil, err
		}
		as = []string{"runuser", "-u", "postgres", "--"}
	}
	run := func(name string, args ...string) error {
		argv := append(slices.Clone(as), append([]string{filepath.Join(bin, name)}, args...)...)
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("postgres: %s: %w\n%s", name, err, out)
		}
		return nil
	}
	data := filepath.Join(dir, "data")
	if err := run("initdb", "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"); err != nil {
		return "", nil, err
	}
	logFile := filepath.Join(dir, "server.log")
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return "", nil, err
		}
		opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off", port, dir)
		err = run("pg_ctl", "-D", data, "-l", logFile, "-w", "-t", "60", "-o", opts, "start")
		if err == nil {
			stop = func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				argv := append(slices.Clone(as), filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop")
				_ = exec.CommandContext(ctx, argv[0], argv[1:]...).Run()
				os.RemoveAll(dir)
			}
			return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), stop, nil
		}
		if attempt == 2 { // the port was taken meanwhile, or something else: give up
			b, _ := os.ReadFile(logFile)
			return "", nil, fmt.Errorf("%w\nserver log:\n%s", err, b)
		}
	}
}

// binDir is the directory of initdb and pg_ctl.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	return "", ErrMissing
}

// version is N of /usr/lib/postgresql/N/bin.
func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// freePort is a TCP port on 127.0.0.1 free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
