package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/mutex"
)

// curator is the curator step: Apache Curator's InterProcessMutex with n
// threads of one JVM (bench/peers/curator/CuratorScale.java, on classpath
// cp, through the proxy), queued on the lock that a zkrecipes mutex of
// another session holds, as the mutex step's goroutines. The JVM is
// measured from outside: its VmRSS and Threads (/proc) when it starts its
// threads and when the last lock node is queued, and its VmHWM at the end;
// the queue's length is the lock's node count (the path's NumChildren, the
// holder's node apart), polled every 10 ms. At capD after the start it is
// killed and the line says where it stopped and how far it got.
func curator(servers []string, n int, cp string, capD, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	px, err := newProxy(servers[0])
	if err != nil {
		return "", err
	}
	defer px.close()
	h, err := conn.Connect(ctx, servers, conn.WithSessionTimeout(30*time.Second))
	if err != nil {
		return "", err
	}
	defer h.Close()
	path := fmt.Sprintf("/zkrecipes-scale/curator-%d-%d", n, time.Now().UnixNano())
	holder, err := mutex.New(h, path)
	if err != nil {
		return "", err
	}
	if _, err := holder.Acquire(ctx); err != nil {
		return "", fmt.Errorf("holder: %w", err)
	}
	// nodes is the number of lock nodes under path.
	nodes := func() (int, error) {
		e, err := connlink.Of(h).Epoch(ctx)
		if err != nil {
			return 0, err
		}
		_, st, err := connlink.Of(e).Exists(ctx, path)
		if err != nil {
			return 0, err
		}
		return int(st.NumChildren), nil
	}

	jvm := exec.Command("java", "-cp", cp, "CuratorScale", px.addr, path, strconv.Itoa(n))
	jvm.Stderr = os.Stderr
	stdin, err := jvm.StdinPipe()
	if err != nil {
		return "", err
	}
	stdout, err := jvm.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := jvm.Start(); err != nil {
		return "", err
	}
	// The JVM's stdout: "ready", then its done line, which it prints
	// once every thread has released and before it waits for stdin to end.
	ready, done, exited := make(chan bool, 1), make(chan string, 1), make(chan error, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		ok := lines.Scan() && lines.Text() == "ready"
		ready <- ok
		if ok && lines.Scan() {
			done <- lines.Text()
		}
		for lines.Scan() {
		}
		exited <- jvm.Wait()
	}()
	defer func() {
		// A JVM still running (a failed step) dies with it; nothing is
		// left to wait for once exited has been received.
		jvm.Process.Kill()
		stdin.Close()
	}()
	select {
	case ok := <-ready:
		if !ok {
			return "", fmt.Errorf("CuratorScale did not say ready: %v", <-exited)
		}
	case <-ctx.Done():
		return "", ctx.Err()
	}
	pid := jvm.Process.Pid
	base, err := procStatus(pid)
	if err != nil {
		return "", err
	}
	bytes0, packets0 := px.sent.Load(), packets(ctx, servers[0])
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		return "", err
	}
	start := time.Now()
	deadline := start.Add(capD)
	r := curatorRun{n: n, stopped: "none"}

	// stop kills the JVM at the cap; at is what it was doing.
	stop := func(at string, st status) error {
		r.stopped, r.secs, r.hwm = at, time.Since(start).Seconds(), st.hwm
		if err := jvm.Process.Kill(); err != nil {
			return err
		}
		<-exited
		return nil
	}
	var queued status
	for {
		k, err := nodes()
		if err != nil {
			return "", err
		}
		r.queued = k - 1 // the holder's node apart
		if r.queued >= n {
			break
		}
		if queued, err = procStatus(pid); err != nil {
			return "", fmt.Errorf("CuratorScale ended while queueing (%d of %d): %v", r.queued, n, <-exited)
		}
		if time.Now().After(deadline) {
			r.queueS = time.Since(start).Seconds()
			r.measure(base, queued, px.sent.Load()-bytes0, packets(ctx, servers[0])-packets0)
			if err := stop("queueing", queued); err != nil {
				return "", err
			}
			return r.line(), nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.queueS = time.Since(start).Seconds()
	if queued, err = procStatus(pid); err != nil {
		return "", err
	}
	r.measure(base, queued, px.sent.Load()-bytes0, packets(ctx, servers[0])-packets0)

	drainStart := time.Now()
	if err := holder.Release(ctx); err != nil {
		return "", fmt.Errorf("holder release: %w", err)
	}
	for {
		k, err := nodes()
		if err != nil {
			return "", err
		}
		r.drained = n - k
		if k == 0 {
			break
		}
		st, err := procStatus(pid)
		if err != nil {
			return "", fmt.Errorf("CuratorScale ended while draining (%d of %d): %v", r.drained, n, <-exited)
		}
		if time.Now().After(deadline) {
			r.drainPerS = float64(r.drained) / time.Since(drainStart).Seconds()
			if err := stop("draining", st); err != nil {
				return "", err
			}
			return r.line(), nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.drainPerS = float64(n) / time.Since(drainStart).Seconds()
	r.secs = time.Since(start).Seconds()
	select {
	case l := <-done:
		if l != fmt.Sprintf("done acquired=%d failed=0", n) {
			return "", fmt.Errorf("CuratorScale said %q", l)
		}
	case err := <-exited:
		return "", fmt.Errorf("CuratorScale ended without its done line: %v", err)
	case <-ctx.Done():
		return "", ctx.Err()
	}
	st, err := procStatus(pid) // it waits for stdin to end
	if err != nil {
		return "", err
	}
	r.hwm = st.hwm
	stdin.Close()
	if err := <-exited; err != nil {
		return "", fmt.Errorf("CuratorScale: %w", err)
	}
	return r.line(), nil
}

// curatorRun is what the curator step measured.
type curatorRun struct {
	n                     int
	queueS, drainPerS     float64
	rssPerWaiter, threads float64 // growth from the start to the reading, per thread started (n)
	bytes, packets        float64 // per lock node queued
	rss, hwm              int64   // bytes
	queued, drained       int
	stopped               string // none, queueing or draining
	secs                  float64
}

// measure records the JVM's growth from base to now and the server's
// traffic while the threads queued.
func (r *curatorRun) measure(base, now status, bytes, packets int64) {
	r.rss = now.rss
	r.rssPerWaiter = float64(now.rss-base.rss) / float64(r.n)
	r.threads = float64(now.threads-base.threads) / float64(r.n)
	q := float64(max(r.queued, 1))
	r.bytes, r.packets = float64(bytes)/q, float64(packets)/q
}

func (r curatorRun) line() string {
	return fmt.Sprintf("curator scale recipe=mutex n=%d queue_s=%.3f rss_per_waiter_b=%.0f threads_per_waiter=%.2f drain_per_s=%.1f server_bytes_per_waiter=%.0f server_packets_per_waiter=%.1f rss_b=%d hwm_b=%d queued=%d drained=%d stopped=%s secs=%.3f",
		r.n, r.queueS, r.rssPerWaiter, r.threads, r.drainPerS, r.bytes, r.packets, r.rss, r.hwm, r.queued, r.drained, r.stopped, r.secs)
}

// status is what /proc/PID/status says of a process's memory (bytes) and
// threads.
type status struct {
	rss, hwm int64
	threads  int
}

// procStatus reads /proc/pid/status; it fails once the process has ended.
func procStatus(pid int) (status, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return status{}, err
	}
	var s status
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		x, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			s.rss = x << 10 // kB
		case "VmHWM":
			s.hwm = x << 10
		case "Threads":
			s.threads = int(x)
		}
	}
	if s.rss == 0 {
		return status{}, fmt.Errorf("/proc/%d/status: no VmRSS (process ended)", pid)
	}
	return s, nil
}
