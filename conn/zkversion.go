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

// ErrZKVersion is returned by Connect when the program links a go-zookeeper
// other than zkVersion (another version selected by the program's module
// graph, or a replacement): conn refuses to run a wire layer written for
// another version's internals.
var ErrZKVersion = errors.New("conn: unsupported go-zookeeper version (conn's wire layer is checked against " +
	zkModule + " " + zkVersion + " only)")

// checkZKVersion returns ErrZKVersion, wrapped with what is linked, when
// the program's build information names a go-zookeeper other than
// zkVersion; nil when it names zkVersion, and nil when it names none
// (binaries built without module information, and test binaries, which
// record no dependencies: there TestZKVersionPinned checks go.mod).
func checkZKVersion() error {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return checkZKBuild(info)
}

// checkZKBuild is checkZKVersion on given build information.
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
			return fmt.Errorf("%w: linked %s %s replaced by %s", ErrZKVersion, zkModule, m.Version, linked)
		}
		if m.Version != zkVersion {
			return fmt.Errorf("%w: linked %s %s", ErrZKVersion, zkModule, m.Version)
		}
		return nil
	}
	return nil
}
