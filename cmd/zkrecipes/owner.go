package main

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"unicode/utf8"

	"github.com/zkrecipes/zkrecipes/internal/locknode"
)

// Owner is who a node's data says queued it. Client is one of:
//
//   - "zkrecipes": this library's node data (host, pid, acquire id, and
//     the caller's label if any; with Handoff, the id and label are the
//     node's first holder's: lock.WithLocalHandoff passes a node between
//     the goroutines of its process without writing it);
//   - "curator": a Curator-named node ("_c_<uuid>-...") whose data is an IP
//     address, Curator's default node data (the client's address);
//   - "kazoo": a kazoo-named node ("<32hex>__lock__<seq>"), whose data is
//     kazoo's identifier (empty when none was given);
//   - "go-zookeeper": a go-zookeeper zk.Lock node ("_c_<32hex>-lock-<seq>"),
//     whose data is empty;
//   - "latch": a LeaderLatch node (ours or Curator's: both write the
//     participant id as the data), ID is the participant id;
//   - "revoke": a lock node whose data is the revoke mark ("__REVOKE__",
//     written by lock.Revoke and Curator's Revoker to ask its holder to
//     release): the mark replaced the data, so the owner and its label are
//     unknown; ID is the uuid in the name, if any;
//   - "unknown": anything else, which is not guessed at.
type Owner struct {
	Client     string `json:"client"`
	Host       string `json:"host,omitempty"`
	PID        int    `json:"pid,omitempty"`
	ID         string `json:"id,omitempty"`
	Label      string `json:"label,omitempty"`   // zkrecipes: the caller's label (lock.WithLabel)
	Handoff    bool   `json:"handoff,omitempty"` // zkrecipes: ID and Label are the node's first holder's
	Address    string `json:"address,omitempty"`
	Identifier string `json:"identifier,omitempty"`
	Bytes      int    `json:"bytes,omitempty"` // unknown: the data's length
}

// ownerOf recognises the owner of a contender from its name and data.
func ownerOf(kind string, c locknode.Contender, data []byte) Owner {
	if kind == kindLeader {
		if text, ok := printable(data); ok && text != "" {
			return Owner{Client: "latch", ID: text}
		}
		return unknown(data)
	}
	if locknode.IsRevokeMark(data) {
		return Owner{Client: "revoke", ID: c.ID}
	}
	if ours(data) {
		d, _ := locknode.DecodeData(data)
		id := c.ID // the name's uuid: data can be copied
		if id == "" {
			id = d.ID
		}
		return Owner{Client: "zkrecipes", Host: d.Host, PID: d.PID, ID: id, Label: d.Label, Handoff: d.Handoff}
	}
	text, ok := printable(data)
	switch {
	case !ok:
	case strings.Contains(c.Name, "__lock__") || strings.Contains(c.Name, "__lease__"):
		// kazoo's own naming: its data is the identifier.
		return Owner{Client: "kazoo", Identifier: text}
	case len(c.ID) == 36 && net.ParseIP(text) != nil:
		return Owner{Client: "curator", Address: text}
	case len(c.ID) == 32 && strings.HasPrefix(c.Name, "_c_") && len(data) == 0:
		return Owner{Client: "go-zookeeper"}
	}
	return unknown(data)
}

func unknown(data []byte) Owner { return Owner{Client: "unknown", Bytes: len(data)} }

// ours reports whether data is this library's node data: the JSON object
// the engine writes, with an acquire id.
func ours(data []byte) bool {
	var d locknode.NodeData
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	return dec.Decode(&d) == nil && d.ID != "" && !dec.More()
}

// printable returns data as text when it is short printable UTF-8.
func printable(data []byte) (string, bool) {
	s := string(data)
	if len(s) > 255 || !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", false
	}
	return s, true
}

// String is the owner as the text view prints it.
func (o Owner) String() string {
	switch o.Client {
	case "zkrecipes":
		s := fmt.Sprintf("zkrecipes host=%s pid=%d id=%s", o.Host, o.PID, o.ID)
		if o.Label != "" {
			s += fmt.Sprintf(" label=%q", o.Label)
		}
		if o.Handoff {
			s += " (local handoff: id and label are the node's first holder's)"
		}
		return s
	case "curator":
		return "curator address=" + o.Address
	case "kazoo":
		return fmt.Sprintf("kazoo identifier=%q", o.Identifier)
	case "latch":
		return fmt.Sprintf("participant id=%q", o.ID)
	case "go-zookeeper":
		return "go-zookeeper"
	case "revoke":
		s := "revoke requested (owner and label unknown)"
		if o.ID != "" {
			s += " id=" + o.ID
		}
		return s
	}
	return fmt.Sprintf("unknown (%d bytes of data)", o.Bytes)
}
