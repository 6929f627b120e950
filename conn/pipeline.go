package conn

import (
	"encoding/binary"
	"sync"
)

// go-zookeeper's create opcodes.
const (
	opCreate          = 1
	opCreate2         = 15
	opCreateContainer = 19
	opCreateTTL       = 21
)

// sentCreates tells when a create request is written: ZooKeeper answers a
// session's requests in order, so a read queued after it is answered after
// it (connlink.Epoch.CreateWritten).
type sentCreates struct {
	mu   sync.Mutex
	next chan struct{} // closed at the next create written; nil while nobody waits
}

// wrote is called by the wire for every frame go-zookeeper writes.
func (s *sentCreates) wrote(p []byte) {
	// int32 length, int32 xid, int32 opcode
	if len(p) < 12 {
		return
	}
	switch int32(binary.BigEndian.Uint32(p[8:])) {
	case opCreate, opCreate2, opCreateContainer, opCreateTTL:
	default:
		return
	}
	s.mu.Lock()
	if s.next != nil {
		close(s.next)
		s.next = nil
	}
	s.mu.Unlock()
}

// after returns a channel closed once the next create request is written.
func (s *sentCreates) after() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next == nil {
		s.next = make(chan struct{})
	}
	return s.next
}

// CreateWritten is closed once the epoch's connection writes its next create.
func (e *epochView) CreateWritten() <-chan struct{} {
	if e.wire == nil {
		return make(chan struct{})
	}
	return e.wire.creates.after()
}
