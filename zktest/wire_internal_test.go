package zktest

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/sessionclose"
)

func TestIsPing(t *testing.T) {
	ping := []byte{0, 0, 0, 8, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 11}
	if !isPing(ping) {
		t.Error("ping not recognised")
	}
	if isPing(append(ping, 0)) || isPing(sessionclose.CloseRequest()) {
		t.Error("non-ping recognised as ping")
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]string{
		"Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/0\nMode: follower\nNode count: 5\n": "follower",
		"Mode: standalone\n": "standalone",
		"This ZooKeeper instance is not currently serving requests\n": "",
		"": "",
	} {
		if got := parseMode(in); got != want {
			t.Errorf("parseMode(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseMntr(t *testing.T) {
	m := parseMntr("zk_version\t3.8.0-1\nzk_server_state\tleader\nzk_packets_sent\t12\n\n")
	if m["zk_server_state"] != "leader" || m["zk_packets_sent"] != "12" || len(m) != 3 {
		t.Fatalf("parseMntr = %v", m)
	}
}

func TestLimits(t *testing.T) {
	for tick, want := range map[time.Duration][2]int{
		500 * time.Millisecond: {10, 5},
		100 * time.Millisecond: {50, 25},
		2 * time.Second:        {10, 5},
	} {
		i, s := limits(tick)
		if i != want[0] || s != want[1] {
			t.Errorf("limits(%v) = %d, %d; want %v", tick, i, s, want)
		}
	}
}
