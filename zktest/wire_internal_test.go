package zktest

import (
	"bytes"
	"testing"
	"time"
)

func TestEncodeConnectRequest(t *testing.T) {
	got := encodeConnectRequest(0x0102030405060708, []byte{0xAA, 0xBB})
	want := []byte{
		0, 0, 0, 31, // length of what follows
		0, 0, 0, 0, // protocolVersion
		0, 0, 0, 0, 0, 0, 0, 0, // lastZxidSeen
		0, 0, 0x27, 0x10, // timeOut 10000
		1, 2, 3, 4, 5, 6, 7, 8, // sessionId
		0, 0, 0, 2, 0xAA, 0xBB, // passwd
		0, // readOnly
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encodeConnectRequest =\n% x\nwant\n% x", got, want)
	}
}

func TestEncodeCloseRequest(t *testing.T) {
	want := []byte{0, 0, 0, 8, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xf5} // xid 1, type -11
	if got := encodeCloseRequest(); !bytes.Equal(got, want) {
		t.Fatalf("encodeCloseRequest = % x, want % x", got, want)
	}
}

func TestDecodeConnectResponse(t *testing.T) {
	frame := []byte{0, 0, 0, 0, 0, 0, 0x0f, 0xa0, 0, 0, 0, 0, 0, 0, 0, 42, 0, 0, 0, 0}
	timeout, sid, err := decodeConnectResponse(frame)
	if err != nil || timeout != 4000 || sid != 42 {
		t.Fatalf("decodeConnectResponse = %d, %d, %v; want 4000, 42", timeout, sid, err)
	}
	if _, _, err := decodeConnectResponse(frame[:10]); err == nil {
		t.Fatal("short frame accepted")
	}
}

func TestIsPing(t *testing.T) {
	ping := []byte{0, 0, 0, 8, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 11}
	if !isPing(ping) {
		t.Error("ping not recognised")
	}
	if isPing(append(ping, 0)) || isPing(encodeCloseRequest()) {
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
