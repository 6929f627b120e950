package conn

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// The go-zookeeper module conn's wire layer (wire.go, watches.go) rewrites
// the frames of, and the one version it was checked against: the layer
// depends on that version's internals (which requests it writes in one
// Write, its xids, its set-watches request, its reader's and connect loop's
// order), which no other version promises to keep.
const (
	zkModule  = "github.com/go-zookeeper/zk"
	zkVersion = "v1.0.4"
)

// ErrZKVersion: the program links a go-zookeeper other than v1.0.4, or a
// replaced v1.0.4 without WithPatchedZK (see zktest.CheckWire).
var ErrZKVersion = errors.New("conn: unsupported go-zookeeper version (conn's wire layer is checked against " +
	zkModule + " " + zkVersion + " only)")

// WithPatchedZK lets Connect run a replaced (patched) go-zookeeper v1.0.4,
// which it otherwise refuses with ErrZKVersion; check the copy with
// zktest.CheckWire. Another version stays refused.
func WithPatchedZK() Option {
	return func(c *config) error { c.patchedZK = true; return nil }
}

// errZKPatched is checkZKBuild's error for a replacement of v1.0.4, which
// WithPatchedZK lets through.
var errZKPatched = errors.New("to run a patched copy of " + zkVersion +
	", pass conn.WithPatchedZK() to Connect, and run zktest.CheckWire against a server in a test")

// checkZKVersion returns ErrZKVersion, wrapped with what is linked, when
// the program's build information names a go-zookeeper other than
// zkVersion, unless it is a replacement of zkVersion and opts hold
// WithPatchedZK; nil when it names zkVersion, and nil when it names none
// (binaries built without module information, and test binaries, which
// record no dependencies: there TestZKVersionPinned checks go.mod).
func checkZKVersion(opts []Option) error {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return checkZKWith(info, opts)
}

// checkZKWith is checkZKVersion on given build information.
func checkZKWith(info *debug.BuildInfo, opts []Option) error {
	err := checkZKBuild(info)
	if errors.Is(err, errZKPatched) && patched(opts) {
		return nil
	}
	return err
}

// patched reports whether opts hold WithPatchedZK.
func patched(opts []Option) bool {
	var c config
	for _, o := range opts {
		if o != nil {
			_ = o(&c) // Connect reports the errors
		}
	}
	return c.patchedZK
}

// checkZKBuild is checkZKVersion on given build information, without
// options: a replacement of zkVersion is an error matching errZKPatched
// too.
func checkZKBuild(info *debug.BuildInfo) error {
	for _, m := range info.Deps {
		if m.Path != zkModule {
			continue
		}
		if r := m.Replace; r != nil {
			if r.Path == zkModule && r.Version == zkVersion {
				return nil
			}
			linked := r.Path
			if r.Version != "" {
				linked += " " + r.Version
			}
			if m.Version == zkVersion {
				return fmt.Errorf("%w: linked %s %s replaced by %s; %w", ErrZKVersion, zkModule, m.Version, linked, errZKPatched)
			}
			return fmt.Errorf("%w: linked %s %s replaced by %s", ErrZKVersion, zkModule, m.Version, linked)
		}
		if m.Version != zkVersion {
			return fmt.Errorf("%w: linked %s %s", ErrZKVersion, zkModule, m.Version)
		}
		return nil
	}
	return nil
}
