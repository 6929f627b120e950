package logfield

import "testing"

func TestSession(t *testing.T) {
	for _, tc := range []struct {
		id   int64
		want string
	}{
		{0x100007f2a3b0000, "0x100007f2a3b0000"},
		{1, "0x1"},
		{-0x7f00000000000000, "0x8100000000000000"}, // server id 129
	} {
		if got := Session("session", tc.id).String; got != tc.want {
			t.Errorf("Session(%d) = %s, want %s", tc.id, got, tc.want)
		}
	}
}
