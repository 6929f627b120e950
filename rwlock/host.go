package rwlock

import (
	"fmt"
	"strings"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// defaultHost is the machine's host name made fit for a node name: every
// character ZooKeeper rejects in a path, and '/', becomes '_'.
func defaultHost() string {
	return sanitizeHost(locknode.Hostname())
}

func sanitizeHost(h string) string {
	h = strings.Map(func(r rune) rune {
		if r == '/' || zkpath.Validate("/x"+string(r)) != nil {
			return '_'
		}
		return r
	}, h)
	if h == "" {
		return "unknown"
	}
	return h
}

// validateHost checks that host makes valid node names under path.
func validateHost(path, host string) error {
	switch {
	case host == "":
		return fmt.Errorf("empty host: %w", conn.ErrInvalidArgument)
	case strings.Contains(host, "/"):
		return fmt.Errorf("host %q contains '/': %w", host, conn.ErrInvalidArgument)
	}
	if err := zkpath.Validate(zkpath.Join(path, host+"-W-0000000000")); err != nil {
		return fmt.Errorf("host %q makes a bad node name: %w", host, err)
	}
	return nil
}
