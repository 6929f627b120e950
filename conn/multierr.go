package conn

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// opError is a multi the server refused (nothing applied): it names the
// failing op and wraps the server's error, e.g. "conn: multi: op 1
// (set-data /stock): zk: version conflict", matching zk.ErrBadVersion.
type opError struct {
	// index is the failing op's place among the caller's ops (from 0).
	index int
	// op names the op: "create", "delete", "set-data" or "check".
	op string
	// path is the op's path, as the caller gave it (without namespace).
	path string
	// err is the server's error for that op (zk.ErrNoNode, ...).
	err error

	call string // "multi" or "guarded write", for the message
}

func (e *opError) Error() string {
	return fmt.Sprintf("conn: %s: op %d (%s %s): %v", e.call, e.index, e.op, e.path, e.err)
}

// Unwrap returns the server's error.
func (e *opError) Unwrap() error { return e.err }

// opName names a multi op and its path, for an opError.
func opName(op any) (string, string) {
	switch o := op.(type) {
	case *zk.CreateRequest:
		return "create", o.Path
	case *zk.DeleteRequest:
		return "delete", o.Path
	case *zk.SetDataRequest:
		return "set-data", o.Path
	case *zk.CheckVersionRequest:
		return "check", o.Path
	}
	return fmt.Sprintf("%T", op), ""
}

// failedOp finds the op a refused multi failed on: the first with an error
// (the server answers ok before it, zk.ErrAPIError after); nil if err is
// no refusal (a connection loss, the epoch's end).
func failedOp(ops []any, res []zk.MultiResponse, err error) *opError {
	if err == nil && len(res) == 0 || errors.Is(err, ErrConnectionLoss) || errors.Is(err, ErrEpochEnded) {
		return nil
	}
	for i, r := range res {
		if r.Error != nil && i < len(ops) {
			name, path := opName(ops[i])
			return &opError{index: i, op: name, path: path, err: r.Error, call: "multi"}
		}
	}
	return nil
}

// describeOps names a multi's ops for an error of no single op, e.g.
// "set-data /a/b +1 op".
func describeOps(ops []any) string {
	if len(ops) == 0 {
		return "(no ops)"
	}
	name, path := opName(ops[0])
	switch len(ops) {
	case 1:
		return name + " " + path
	case 2:
		return name + " " + path + " +1 op"
	}
	return fmt.Sprintf("%s %s +%d ops", name, path, len(ops)-1)
}
