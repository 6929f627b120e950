package conn_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestLogsSessionIDsInHex: every session id the session logs (established,
// expired, the next one) reads as ZooKeeper's own logs print it, 0x and
// hex, so that a log line can be matched with the server's.
func TestLogsSessionIDsInHex(t *testing.T) {
	c := zktest.New(t)
	core, logs := observer.New(zap.DebugLevel)
	s := connect(t, c.Servers(), conn.WithLogger(zap.New(core)), conn.WithSessionTimeout(4*time.Second))
	ep := epoch(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, zktest.ExpireEpoch(ctx, c.Servers()[0], ep))
	<-ep.Done()
	next, err := connlink.Of(s).Epoch(ctx)
	require.NoError(t, err)

	hex := regexp.MustCompile(`^0x[0-9a-f]+$`)
	seen := map[string]bool{}
	for _, e := range logs.All() {
		for _, f := range e.Context {
			if !strings.Contains(f.Key, "session") || f.Type == zapcore.DurationType {
				continue
			}
			v := fmt.Sprint(f.Interface)
			if f.Type == zapcore.StringType {
				v = f.String
			} else if f.Type == zapcore.Int64Type {
				v = fmt.Sprint(f.Integer)
			}
			if !hex.MatchString(v) {
				t.Errorf("%q: %s=%s, want 0x and hex", e.Message, f.Key, v)
			}
			seen[v] = true
		}
	}
	for _, id := range []int64{ep.SessionID(), next.SessionID()} {
		if want := fmt.Sprintf("0x%x", id); !seen[want] {
			t.Errorf("session %s never logged; logged: %v", want, seen)
		}
	}
}
