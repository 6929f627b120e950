package zktest

import (
	"context"
	"os"
	"strconv"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
)

// Without the reaper of testcontainers-go, a test binary that dies before its
// cleanup (a -timeout panic, a SIGKILL) leaves its containers behind. Each
// container and network therefore records its owner: the test binary's pid
// and PID namespace. Before creating anything, the docker backend removes
// what belongs to dead owners of the same PID namespace.
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
func reapOrphans(ctx context.Context, cli *client.Client) {
	own := ownerLabels()
	if own == nil {
		return
	}
	args := filters.NewArgs(filters.Arg("label", labelOwnerPIDNS+"="+own[labelOwnerPIDNS]))
	orphan := func(labels map[string]string) bool {
		pid, err := strconv.Atoi(labels[labelOwnerPID])
		return err == nil && pid > 0 && !processAlive(pid)
	}
	if cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: args}); err == nil {
		for _, c := range cs {
			if orphan(c.Labels) {
				_ = cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
			}
		}
	}
	if ns, err := cli.NetworkList(ctx, network.ListOptions{Filters: args}); err == nil {
		for _, n := range ns {
			if orphan(n.Labels) {
				_ = cli.NetworkRemove(ctx, n.ID)
			}
		}
	}
}
