package conn

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"time"

	"github.com/go-zookeeper/zk"
)

// retryPolicy is WithRetry's: backoff from BaseDelay doubling to MaxDelay,
// full jitter, at most MaxAttempts attempts (0: ctx and the epoch bound).
type retryPolicy struct {
	BaseDelay   time.Duration // > 0
	MaxDelay    time.Duration // >= BaseDelay
	MaxAttempts int           // >= 0, the first attempt included
}

// defaultRetryPolicy: 20ms doubling up to 1s, attempts unbounded.
func defaultRetryPolicy() retryPolicy {
	return retryPolicy{BaseDelay: 20 * time.Millisecond, MaxDelay: time.Second}
}

// delay is the pause before retry number attempt (1 = first retry).
func (p retryPolicy) delay(attempt int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < attempt && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

// isConnectionLoss reports whether the connection dropped under the request
// (go-zookeeper returns raw socket errors when a write fails).
func isConnectionLoss(err error) bool {
	var ne net.Error
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
