package queue

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
)

// Participant is one contender as Participants reports it.
type Participant struct {
	locknode.Contender
	// Host and PID say which process queued the node (and ID, if not in
	// the name, comes from the data). Known is false when the data is not
	// this engine's (a foreign node, a revoke mark).
	Host  string
	PID   int
	Known bool
	// Tag is the node's Config.Tag (engine nodes only).
	Tag string
	// Label is the caller's lock.WithLabel (engine nodes only).
	Label string
	// Session is the ephemeralOwner, ACLVersion the ACL's (see locknode.RWNode).
	Session    int64
	ACLVersion int32
}

// Public is p as a recipe reports it: its node under dir, holding or not.
func (p Participant) Public(dir string, holding bool) lock.Participant {
	return lock.Participant{Node: zkpath.Join(dir, p.Name), Holding: holding, Seq: p.Seq, ID: p.ID,
		Host: p.Host, PID: p.PID, Known: p.Known, Label: p.Label}
}

// Participants lists the contenders in queue order with who they are;
// nodes that leave meanwhile are left out. Errors are the session's.
func (q *Queue) Participants(ctx context.Context) ([]Participant, error) {
	ep, err := connlink.Of(q.sess).Epoch(ctx)
	if err != nil {
		return nil, err
	}
	names, _, err := connlink.Of(ep).Children(ctx, q.path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cs := locknode.Parse(q.cfg.Schema, names)
	out := make([]Participant, 0, len(cs))
	for _, c := range cs {
		b, st, err := connlink.Of(ep).Get(ctx, zkpath.Join(q.path, c.Name))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		p := Participant{Contender: c, Session: st.EphemeralOwner, ACLVersion: st.Aversion}
		if d, ok := locknode.DecodeData(b); ok {
			p.Host, p.PID, p.Known, p.Tag, p.Label = d.Host, d.PID, true, d.Tag, d.Label
			if p.ID == "" { // the name's uuid is the id; data can be copied
				p.ID = d.ID
			}
		}
		out = append(out, p)
	}
	return out, nil
}
