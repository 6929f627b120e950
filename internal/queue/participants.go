package queue

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/lock"
)

// Participant is one contender as Participants reports it.
type Participant struct {
	Contender
	// Host and PID say which process queued the node, and ID its acquire
	// id (from the name, else from the data). Known is false when the data
	// could not be read as this engine's or as a host name (a foreign
	// client's node, or one lock.Revoke marked): then only the name-derived
	// fields are set.
	Host  string
	PID   int
	Known bool
	// Tag is the Config.Tag of the queue that created the node (engine
	// nodes only).
	Tag string
	// Label is the caller's label (lock.WithLabel), engine nodes only.
	Label string
	// Session is the session that created the node (ephemeralOwner), and
	// ACLVersion its ACL's version (see RWNode).
	Session    int64
	ACLVersion int32
}

// Public is p as a recipe reports it: its node under dir, holding or not.
func (p Participant) Public(dir string, holding bool) lock.Participant {
	return lock.Participant{Node: zkpath.Join(dir, p.Name), Holding: holding, Seq: p.Seq, ID: p.ID,
		Host: p.Host, PID: p.PID, Known: p.Known, Label: p.Label}
}

// Participants lists the contenders in queue order with who they are. For
// the recipes built on First, the first one holds the lock. Nodes that
// leave while they are being read are left out. Errors are the session's,
// as they are: the recipe says what it was doing.
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
	cs := Parse(q.cfg.Schema, names)
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
		if d, ok := decodeData(b); ok {
			p.Host, p.PID, p.Known, p.Tag, p.Label = d.Host, d.PID, true, d.Tag, d.Label
			if p.ID == "" { // the name's uuid is the id; data can be copied
				p.ID = d.ID
			}
		}
		out = append(out, p)
	}
	return out, nil
}
