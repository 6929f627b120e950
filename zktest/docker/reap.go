package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"

	"github.com/moby/moby/client"
)

// The label reaper: every container and network records its owner, the test
// binary's pid and PID namespace; before creating anything, Start removes
// those of dead owners in the same PID namespace.
const (
	labelCluster    = "org.zkrecipes.zktest" // the cluster's id
	labelOwnerPID   = "org.zkrecipes.zktest.pid"
	labelOwnerPIDNS = "org.zkrecipes.zktest.pidns"
)

func randomID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

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
	filter := make(client.Filters).Add("label", labelOwnerPIDNS+"="+own[labelOwnerPIDNS])
	dead := func(labels map[string]string) bool {
		pid, err := strconv.Atoi(labels[labelOwnerPID])
		return err == nil && pid > 0 && !processAlive(pid)
	}
	if list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filter}); err == nil {
		for _, c := range list.Items {
			if dead(c.Labels) {
				_, _ = cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
			}
		}
	}
	if list, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: filter}); err == nil {
		for _, n := range list.Items {
			if dead(n.Labels) {
				_, _ = cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{})
			}
		}
	}
}
