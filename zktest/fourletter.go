package zktest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// fourLetterTimeout bounds a four-letter-word exchange whose context has no
// deadline: a paused server accepts (through docker's port proxy or the
// kernel's backlog) but never answers.
const fourLetterTimeout = 5 * time.Second

// FourLetter sends the four-letter word cmd ("srvr", "mntr", "cons", "wchc",
// "ruok", ...) to server i and returns the whole reply. The docker and local
// backends allow every word; an external ensemble answers only the words in
// its 4lw.commands.whitelist. Without a deadline in ctx the exchange is
// limited to 5 s.
func (c *Cluster) FourLetter(ctx context.Context, i int, cmd string) (string, error) {
	if i < 0 || i >= len(c.servers) {
		return "", fmt.Errorf("zktest: %s on server %d: %w (the cluster has %d)", cmd, i, ErrNoServer, len(c.servers))
	}
	return fourLetter(ctx, c.servers[i], cmd)
}

// Mntr runs `mntr` on server i and returns its key/value pairs, such as
// "zk_server_state" and "zk_packets_sent".
func (c *Cluster) Mntr(ctx context.Context, i int) (map[string]string, error) {
	if i < 0 || i >= len(c.servers) {
		return nil, fmt.Errorf("zktest: mntr on server %d: %w (the cluster has %d)", i, ErrNoServer, len(c.servers))
	}
	return MntrAt(ctx, c.servers[i])
}

// FourLetterAt sends the four-letter word cmd to the server at addr
// ("host:port", any ZooKeeper server, not only a Cluster's) and returns the
// whole reply. Without a deadline in ctx the exchange is limited to 5 s.
func FourLetterAt(ctx context.Context, addr, cmd string) (string, error) {
	return fourLetter(ctx, addr, cmd)
}

// MntrAt runs `mntr` on the server at addr and returns its key/value pairs.
// The server must allow mntr (4lw.commands.whitelist).
func MntrAt(ctx context.Context, addr string) (map[string]string, error) {
	out, err := fourLetter(ctx, addr, "mntr")
	if err != nil {
		return nil, err
	}
	m := parseMntr(out)
	if len(m) == 0 {
		return nil, fmt.Errorf("zktest: mntr on %s: unexpected reply %q", addr, truncate(out, 200))
	}
	return m, nil
}

// fourLetter sends cmd to addr and reads the reply until the server closes
// the connection.
func fourLetter(ctx context.Context, addr, cmd string) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, fourLetterTimeout)
		defer cancel()
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("zktest: %s on %s: %w", cmd, addr, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", fmt.Errorf("zktest: %s on %s: %w", cmd, addr, ctxErr(ctx, err))
	}
	out, err := io.ReadAll(io.LimitReader(conn, 4<<20))
	if err != nil {
		return "", fmt.Errorf("zktest: %s on %s: %w", cmd, addr, ctxErr(ctx, err))
	}
	return string(out), nil
}

// ctxErr prefers the context's error to the I/O error it caused.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// parseMode returns the value of the "Mode:" line of a srvr reply
// ("leader", "follower", "standalone", ...) or "".
func parseMode(srvr string) string {
	sc := bufio.NewScanner(strings.NewReader(srvr))
	for sc.Scan() {
		if mode, ok := strings.CutPrefix(sc.Text(), "Mode:"); ok {
			return strings.TrimSpace(mode)
		}
	}
	return ""
}

// parseMntr parses the tab-separated lines of a mntr reply.
func parseMntr(out string) map[string]string {
	m := make(map[string]string)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "\t")
		if ok && k != "" {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
