package sessionclose

import (
	"bytes"
	"testing"
)

func TestConnectRequest(t *testing.T) {
	got := ConnectRequest(0x0102030405060708, []byte{0xAA, 0xBB})
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
		t.Fatalf("ConnectRequest =\n% x\nwant\n% x", got, want)
	}
}

func TestCloseRequest(t *testing.T) {
	want := []byte{0, 0, 0, 8, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xf5} // xid 1, type -11
	if got := CloseRequest(); !bytes.Equal(got, want) {
		t.Fatalf("CloseRequest = % x, want % x", got, want)
	}
}

func TestConnectResponse(t *testing.T) {
	frame := []byte{0, 0, 0, 0, 0, 0, 0x0f, 0xa0, 0, 0, 0, 0, 0, 0, 0, 42, 0, 0, 0, 0}
	timeout, sid, err := ConnectResponse(frame)
	if err != nil || timeout != 4000 || sid != 42 {
		t.Fatalf("ConnectResponse = %d, %d, %v; want 4000, 42", timeout, sid, err)
	}
	if _, _, err := ConnectResponse(frame[:10]); err == nil {
		t.Fatal("short frame accepted")
	}
}
