package lockopt_test

import (
	"errors"
	"testing"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/lockopt"
)

type option func(*lockopt.Config) error

func host(h string) option {
	return func(c *lockopt.Config) error {
		c.Given |= lockopt.Host
		c.Host = h
		return nil
	}
}

// Configure applies each option once, derives the bools from Given, and
// refuses a repeated option, naming it, as it refuses one not taken.
func TestConfigure(t *testing.T) {
	sess := new(conn.Session) // Configure only checks that there is one
	all := lockopt.Revocable | lockopt.Host | lockopt.Requeue
	cfg, err := lockopt.Configure("x.New", sess, "/a", all, []option{lockopt.Give(lockopt.Revocable), host("h")})
	if err != nil || !cfg.Revocable || cfg.Requeue || cfg.Host != "h" || cfg.Given != lockopt.Revocable|lockopt.Host {
		t.Fatalf("Configure = %+v, %v", cfg, err)
	}
	for _, tc := range []struct {
		opts []option
		want string
	}{
		{[]option{host("a"), lockopt.Give(lockopt.Revocable), host("b")}, "x: new /a: rwlock.WithHost given twice: conn: invalid argument"},
		{[]option{lockopt.Give(lockopt.Requeue), lockopt.Give(lockopt.Requeue)}, "x: new /a: leader.WithRequeue given twice: conn: invalid argument"},
		{[]option{lockopt.Give(lockopt.LocalHandoff)}, "x: new /a: lock.WithLocalHandoff: not an option of x.New: conn: invalid argument"},
		{[]option{nil}, "x: new /a: nil option: conn: invalid argument"},
	} {
		_, err := lockopt.Configure("x.New", sess, "/a", all, tc.opts)
		if !errors.Is(err, conn.ErrInvalidArgument) || err.Error() != tc.want {
			t.Errorf("Configure = %v, want %q", err, tc.want)
		}
	}
}
