package conn

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"time"

	"github.com/go-zookeeper/zk"
)

// RetryPolicy says how idempotent operations (reads, deletes, versioned sets,
// non-sequential creates) are retried when the connection drops under them:
// exponential backoff from BaseDelay, doubling up to MaxDelay, with full
// jitter. Retries also stop when the caller's context or the epoch ends.
// Sequential creates and multis are never retried blindly.
type RetryPolicy struct {
	BaseDelay time.Duration // > 0
	MaxDelay  time.Duration // >= BaseDelay
	// MaxAttempts bounds the attempts, the first included; 0 means no bound
	// other than the context and the epoch.
	MaxAttempts int
}

// DefaultRetryPolicy: 20ms doubling up to 1s, attempts bounded only by the
// caller's context and the epoch.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{BaseDelay: 20 * time.Millisecond, MaxDelay: time.Second}
}

func (p RetryPolicy) validate() error {
	if p.BaseDelay <= 0 || p.MaxDelay < p.BaseDelay || p.MaxAttempts < 0 {
		return fmt.Errorf("retry policy %+v needs 0 < BaseDelay <= MaxDelay and MaxAttempts >= 0: %w", p, ErrInvalidArgument)
	}
	return nil
}

// delay is the pause before retry number attempt (1 = first retry).
func (p RetryPolicy) delay(attempt int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < attempt && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

// isConnectionLoss reports whether err means the request's fate is unknown
// because the connection dropped.
// go-zookeeper hands back raw socket errors when a write fails.
func isConnectionLoss(err error) bool {
	var ne net.Error
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
