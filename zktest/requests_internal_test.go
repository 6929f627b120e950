package zktest

import (
	"encoding/binary"
	"testing"
)

// frame is one length-prefixed frame with xid and opcode.
func frame(xid, op int32, body int) []byte {
	b := make([]byte, 12+body)
	binary.BigEndian.PutUint32(b[0:], uint32(8+body))
	binary.BigEndian.PutUint32(b[4:], uint32(xid))
	binary.BigEndian.PutUint32(b[8:], uint32(op))
	return b
}

// TestRequests: BlackholeAfterWrites counts requests, not chunks: a chunk
// may hold a request and the one sent behind it without waiting, or a
// ping; it ends at the request counted last.
func TestRequests(t *testing.T) {
	create, list, ping := frame(1, 1, 20), frame(2, 12, 10), frame(-2, 11, 0)
	cat := func(fs ...[]byte) []byte {
		var b []byte
		for _, f := range fs {
			b = append(b, f...)
		}
		return b
	}
	for _, tc := range []struct {
		name         string
		chunk        []byte
		limit        int
		wantN, wantE int
	}{
		{"one request", create, 1, 1, len(create)},
		{"ping only", ping, 1, 0, len(ping)},
		{"two, the first counted", cat(create, list), 1, 1, len(create)},
		{"two, both counted", cat(create, list), 2, 2, len(create) + len(list)},
		{"two, fewer than the limit", cat(create, list), 4, 2, len(create) + len(list)},
		{"ping then request", cat(ping, create), 1, 1, len(ping) + len(create)},
		{"cut-off frame", cat(create, list[:7]), 2, 2, len(create) + 7},
	} {
		n, end := requests(tc.chunk, tc.limit)
		if n != tc.wantN || end != tc.wantE {
			t.Errorf("%s: requests = %d, %d; want %d, %d", tc.name, n, end, tc.wantN, tc.wantE)
		}
	}
}

// requests counts, as BlackholeAfterWrites does, the requests in chunk (on
// a link past its handshake) up to limit: the count and the end of the
// last one counted.
func requests(chunk []byte, limit int) (n, end int) {
	l := &link{sent: 1}
	end, _ = l.frames(chunk, func(f []byte, _ bool) bool {
		if isPing(f) {
			return false
		}
		n++
		return n == limit
	})
	return n, end
}

// TestOps: BlackholeAfterNextOp counts the client's operations only: not
// a new link's handshake, its authentication (go-zookeeper's re-sent one
// or an AddAuth) or set-watches, nor pings;
// and it follows frames across chunks, so that the rest of a long request
// is not taken for a new one.
func TestOps(t *testing.T) {
	handshake, auth, setWatches := frame(0, 0, 28), frame(-4, 100, 16), frame(-8, 101, 30)
	sync, ping := frame(3, 9, 10), frame(-2, 11, 0)
	l := &link{}
	count := func(chunk []byte) (int, bool) {
		return l.frames(chunk, func(f []byte, first bool) bool { return !isPing(f) && !first && !isSetUp(f) })
	}
	addAuth := frame(5, 100, 16) // go-zookeeper's AddAuth: an ordinary xid
	for i, c := range [][]byte{handshake, auth, addAuth, ping, setWatches[:9], setWatches[9:]} {
		if _, hit := count(c); hit {
			t.Fatalf("chunk %d counted as an operation", i)
		}
	}
	if end, hit := count(append(append([]byte(nil), ping...), sync...)); !hit || end != len(ping)+len(sync) {
		t.Fatalf("the sync: hit %v, end %d", hit, end)
	}
}

// TestOpOn: BlackholeAfterNextOpOn counts the operations on its path or
// on a node below it only: not the syncs of "/" (the quorum timer's), nor
// those on a sibling whose name extends it, nor an authentication.
func TestOpOn(t *testing.T) {
	req := func(typ int32, path string) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(12+len(path)))
		b = binary.BigEndian.AppendUint32(b, 7)
		b = binary.BigEndian.AppendUint32(b, uint32(typ))
		b = binary.BigEndian.AppendUint32(b, uint32(len(path)))
		return append(b, path...)
	}
	for _, c := range []struct {
		frame []byte
		want  bool
	}{
		{req(9, "/a/lock"), true},
		{req(9, "/a/lock/leases"), true},
		{req(9, "/"), false},
		{req(9, "/a/lock2"), false},
		{req(8, "/a/lock"), true},
		{req(4, "/a/lock/n"), true},
		{req(100, "/a/lock"), false},
		{req(9, "/a/lock")[:18], false},
	} {
		if got := isOpOn(c.frame, "/a/lock"); got != c.want {
			t.Errorf("isOpOn(%q) = %v, want %v", c.frame, got, c.want)
		}
	}
}
