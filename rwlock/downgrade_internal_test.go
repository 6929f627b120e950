package rwlock

import (
	"errors"
	"strings"
	"testing"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
)

func TestBetween(t *testing.T) {
	s := locknode.HostKindSchema{}
	for _, tc := range []struct {
		name  string
		nodes []string
		w, r  string
		want  afterRelease
	}{
		{"only ours", []string{"a-W-0000000001", "a-R-0000000002"}, "a-W-0000000001", "a-R-0000000002", readAlone},
		{"readers between", []string{"a-W-0000000001", "b-R-0000000002", "c-R-0000000003", "a-R-0000000004"}, "a-W-0000000001", "a-R-0000000004", readAlone},
		{"writer between", []string{"a-W-0000000001", "b-W-0000000002", "a-R-0000000003"}, "a-W-0000000001", "a-R-0000000003", keepWrite},
		{"writer between, dashed host", []string{"my-host-W-0000000001", "x-R-y-W-0000000002", "my-host-R-0000000003"}, "my-host-W-0000000001", "my-host-R-0000000003", keepWrite},
		{"writer after our read", []string{"a-W-0000000001", "a-R-0000000002", "b-W-0000000003"}, "a-W-0000000001", "a-R-0000000002", readAlone},
		{"foreign names ignored", []string{"a-W-0000000001", "lock-0000000002", "b-X-0000000003", "a-R-0000000004"}, "a-W-0000000001", "a-R-0000000004", readAlone},
		{"our read gone: any later writer", []string{"a-W-0000000001", "b-W-0000000005"}, "a-W-0000000001", "a-R-0000000003", keepWrite},
		{"our read gone, no writer", []string{"a-W-0000000001", "b-R-0000000005"}, "a-W-0000000001", "a-R-0000000003", readAlone},
		{"our write gone", []string{"b-W-0000000002", "a-R-0000000003"}, "a-W-0000000001", "a-R-0000000003", writeGone},
		{"our write gone, no writer", []string{"a-R-0000000003"}, "a-W-0000000001", "a-R-0000000003", writeGone},
		{"across the wrap", []string{"a-W-2147483646", "b-W-2147483647", "a-R--2147483648"}, "a-W-2147483646", "a-R--2147483648", keepWrite},
		{"negative numbers", []string{"a-W--000000003", "b-R--000000002", "a-R--000000001"}, "a-W--000000003", "a-R--000000001", readAlone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := between(locknode.Parse(s, tc.nodes), tc.w, tc.r); got != tc.want {
				t.Errorf("between(%v, %s, %s) = %v, want %v", tc.nodes, tc.w, tc.r, got, tc.want)
			}
		})
	}
}

func TestDowngradedGrantsAtOnce(t *testing.T) {
	cs := locknode.Parse(locknode.HostKindSchema{}, []string{"a-W-0000000001", "b-W-0000000002", "a-R-0000000003"})
	if ok, watch := downgraded.Decide(cs, 2); !ok || watch != "" {
		t.Errorf("downgraded = %v, %q", ok, watch)
	}
}

func TestHost(t *testing.T) {
	for _, h := range []string{"a", "host-1", "10.0.0.1", "a-R", "a-W-1", "ä", "x_y.z:8080"} {
		if err := validateHost("/l", h); err != nil {
			t.Errorf("validateHost(%q): %v", h, err)
		}
	}
	for _, h := range []string{"", "a/b", "/", "a\x00b", "a\x01", "a\u0085", "a\ufffd"} {
		err := validateHost("/l", h)
		if !errors.Is(err, conn.ErrInvalidArgument) || !strings.Contains(err.Error(), "host") {
			t.Errorf("validateHost(%q) = %v, want ErrInvalidArgument naming the host", h, err)
		}
	}
	for in, want := range map[string]string{"": "unknown", "web-1": "web-1", "a/b": "a_b", "a\x01b": "a_b"} {
		if got := sanitizeHost(in); got != want {
			t.Errorf("sanitizeHost(%q) = %q, want %q", in, got, want)
		}
	}
	if h := sanitizeHost(locknode.Hostname()); h == "" || strings.ContainsRune(h, '/') || validateHost("/l", h) != nil {
		t.Errorf("sanitizeHost(locknode.Hostname()) = %q is not a valid host", h)
	}
}
