package zktest

import (
	"context"
	"errors"
	"fmt"
	"time"
)

const pollInterval = 100 * time.Millisecond

// WaitServing returns once every live server (not killed, not paused)
// answers `srvr` with a Mode: line, and, if more than one server runs, one
// of them is leader. Without a deadline in ctx it waits at most the
// backend's readiness timeout (60 s docker, 30 s local and external).
func (c *Cluster) WaitServing(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.drv.readyTimeout())
		defer cancel()
	}
	return c.waitServers(ctx, c.live(), len(c.live()) > 1)
}

// Leader returns the index of the server whose `srvr` says Mode: leader; a
// standalone server counts as leader. It asks each live server once.
func (c *Cluster) Leader() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), fourLetterTimeout)
	defer cancel()
	var errs []error
	for _, i := range c.live() {
		out, err := fourLetter(ctx, c.servers[i], "srvr")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if mode := parseMode(out); mode == "leader" || mode == "standalone" {
			return i, nil
		}
	}
	return -1, fmt.Errorf("zktest: leader: %w: no live server is leader (%w)", ErrNotServing, errors.Join(errs...))
}

// waitReady waits for a freshly started cluster: all servers serve and, for
// an ensemble, one is leader.
func (c *Cluster) waitReady(ctx context.Context, owned bool) error {
	ctx, cancel := context.WithTimeout(ctx, c.drv.readyTimeout())
	defer cancel()
	all := make([]int, len(c.servers))
	for i := range all {
		all[i] = i
	}
	return c.waitServers(ctx, all, owned && len(all) > 1)
}

// waitServers polls srvr on the given servers until each answers with a
// Mode: line and, if wantLeader, one answer is "leader".
func (c *Cluster) waitServers(ctx context.Context, idx []int, wantLeader bool) error {
	for {
		leader := false
		var notReady error
		for _, i := range idx {
			mode, err := c.mode(ctx, i)
			if err != nil {
				notReady = err
				break
			}
			leader = leader || mode == "leader"
		}
		if notReady == nil && (leader || !wantLeader) {
			return nil
		}
		if notReady == nil {
			notReady = errors.New("no server is leader")
		}
		if err := c.sleepPoll(ctx, idx, notReady); err != nil {
			return err
		}
	}
}

// waitServer polls srvr on server i until it answers with a Mode: line.
func (c *Cluster) waitServer(ctx context.Context, i int) error {
	for {
		_, err := c.mode(ctx, i)
		if err == nil {
			return nil
		}
		if err := c.sleepPoll(ctx, []int{i}, err); err != nil {
			return err
		}
	}
}

// mode returns server i's Mode, or an error if it does not serve yet.
func (c *Cluster) mode(ctx context.Context, i int) (string, error) {
	actx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	out, err := fourLetter(actx, c.servers[i], "srvr")
	if err != nil {
		return "", fmt.Errorf("server %d (%s): %w", i, c.servers[i], err)
	}
	mode := parseMode(out)
	if mode == "" {
		return "", fmt.Errorf("server %d (%s): srvr reply without Mode: %q", i, c.servers[i], truncate(out, 200))
	}
	return mode, nil
}

// sleepPoll sleeps one poll interval. It returns an error when ctx ends or a
// server has exited, with lastErr and the server log tail.
func (c *Cluster) sleepPoll(ctx context.Context, idx []int, lastErr error) error {
	for _, i := range idx {
		if err := c.drv.exited(ctx, i); err != nil {
			return c.notServing(i, fmt.Errorf("%w (%w)", err, lastErr))
		}
	}
	t := time.NewTimer(pollInterval)
	defer t.Stop()
	select {
	case <-ctx.Done():
		i := -1
		if len(idx) == 1 {
			i = idx[0]
		}
		return c.notServing(i, fmt.Errorf("%w: %w", ctx.Err(), lastErr))
	case <-t.C:
		return nil
	}
}

// notServing builds the error for a server (or all servers, i < 0) that did
// not come up, with the tail of its log.
func (c *Cluster) notServing(i int, cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var logs string
	for j := range c.servers {
		if i >= 0 && j != i {
			continue
		}
		if tail := c.drv.diagnose(ctx, j); tail != "" {
			logs += fmt.Sprintf("\n--- server %d log (tail) ---\n%s", j, tail)
		}
	}
	return fmt.Errorf("%w (%s backend): %w%s", ErrNotServing, c.backend, cause, logs)
}
