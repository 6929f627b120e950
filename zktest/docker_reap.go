package zktest

import (
	"context"
	"os"
	"strconv"
	"strings"
)

// A test binary that dies before its cleanup (a -timeout panic, a SIGKILL)
// leaves its containers behind. Each container and network therefore
// records its owner: the test binary's pid and PID namespace. Before
// creating anything, the docker backend removes what belongs to dead owners
// of the same PID namespace.
const (
	labelOwnerPID   = "org.zkrecipes.zktest.pid"
	labelOwnerPIDNS = "org.zkrecipes.zktest.pidns"
)

// ownerLabels returns the labels naming this process as owner; none where
// the PID namespace cannot be read (then nothing is ever reaped).
func ownerLabels() map[string]string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil || ns == "" {
		return nil
	}
	return map[string]string{labelOwnerPID: strconv.Itoa(os.Getpid()), labelOwnerPIDNS: ns}
}

// reapOrphans removes the containers and networks of dead owners that share
// our PID namespace. It is best effort: errors are ignored.
func reapOrphans(ctx context.Context) {
	own := ownerLabels()
	if own == nil {
		return
	}
	filter := "label=" + labelOwnerPIDNS + "=" + own[labelOwnerPIDNS]
	format := `{{.ID}} {{.Label "` + labelOwnerPID + `"}}`
	// orphans lists the ids, among "id pid" lines, whose owner is dead.
	orphans := func(out string) []string {
		var ids []string
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) != 2 {
				continue
			}
			if pid, err := strconv.Atoi(f[1]); err == nil && pid > 0 && !processAlive(pid) {
				ids = append(ids, f[0])
			}
		}
		return ids
	}
	if out, err := docker(ctx, "ps", "--all", "--no-trunc", "--filter", filter, "--format", format); err == nil {
		if ids := orphans(out); len(ids) > 0 {
			_, _ = docker(ctx, append([]string{"rm", "--force", "--volumes"}, ids...)...)
		}
	}
	if out, err := docker(ctx, "network", "ls", "--no-trunc", "--filter", filter, "--format", format); err == nil {
		if ids := orphans(out); len(ids) > 0 {
			_, _ = docker(ctx, append([]string{"network", "rm"}, ids...)...)
		}
	}
}
