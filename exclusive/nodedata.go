package exclusive

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
)

// nodeData is what the lock node says about its holder: host, pid and the
// unique id of the Acquire call that created it, as "host=H pid=P id=ID".
// The id lets an Acquire whose create had an unknown fate recognise its own
// node; the host and pid are for people reading the tree.
func nodeData(id string) []byte {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return []byte(fmt.Sprintf("host=%s pid=%d id=%s", host, os.Getpid(), id))
}

// hasID reports whether node data was written by the Acquire call with id.
func hasID(data []byte, id string) bool {
	return bytes.HasSuffix(data, []byte(" id="+id))
}

// newID returns a random 128-bit id in hex.
func newID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b[:])
}
