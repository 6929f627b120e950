package conn

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"time"

	"go.uber.org/zap"

	"github.com/zkrecipes/zkrecipes/internal/logfield"
	"github.com/zkrecipes/zkrecipes/internal/sessionclose"
)

// closeGivenUp closes on the server the session of ep, which the local
// timer gave up: the server may keep it up to a session timeout longer, and
// its ephemeral nodes (a holder's, a waiter's, a create whose answer was
// lost) would stand in the queues until then. It tries the servers in turn
// until one answers, the server must have expired the session anyway, or
// Close.
func (s *Session) closeGivenUp(ep *Epoch) {
	ctx, cancel := context.WithTimeout(context.Background(), ep.timeout)
	go func() { // ends with ctx, at the latest when the closer below returns
		select {
		case <-s.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	s.helpers.Add(1)
	go func() {
		defer s.helpers.Done()
		defer cancel()
		start := rand.IntN(len(s.servers))
		for i := 0; ctx.Err() == nil; i++ {
			srv := s.servers[(start+i)%len(s.servers)]
			err := s.closeOn(ctx, srv, ep)
			switch {
			case err == nil:
				s.log.Info("closed the given-up session on the server", logfield.Session("session", ep.sessionID), zap.String("server", srv))
				return
			case errors.Is(err, sessionclose.ErrRefused):
				s.log.Info("the server had ended the given-up session already", logfield.Session("session", ep.sessionID))
				return
			}
			s.log.Debug("closing the given-up session", logfield.Session("session", ep.sessionID), zap.String("server", srv), zap.Error(err))
			if i%len(s.servers) == len(s.servers)-1 { // every server tried: a pause, not a storm
				t := time.NewTimer(100 * time.Millisecond)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
				}
			}
		}
	}()
}

// closeOn attaches to ep's session on server srv and closes it, within
// T/12 (at least 250 ms): a server that has just elected a leader may
// still be syncing with it, and another try soon beats a long wait.
func (s *Session) closeOn(ctx context.Context, srv string, ep *Epoch) error {
	wait := max(ep.timeout/quorumPeriod, 250*time.Millisecond)
	c, err := s.cfg.dialer("tcp", srv, wait)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	err = sessionclose.CloseConn(ctx, c, ep.sessionID, ep.passwd)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		s.silent.add(srv)
	case !errors.Is(err, net.ErrClosed):
		s.silent.heard(srv)
	}
	return err
}
