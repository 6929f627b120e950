package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// LocksView is the answer of `zkrecipes locks PATH`.
type LocksView struct {
	Path   string  `json:"path"`
	Queues []Queue `json:"queues"`
}

// LeaderView is the answer of `zkrecipes leader PATH`.
type LeaderView struct {
	Path      string `json:"path"`
	Leader    *Node  `json:"leader"` // null when nobody campaigns
	Followers []Node `json:"followers"`
}

func leaderView(path string, qs []Queue) LeaderView {
	v := LeaderView{Path: path, Followers: []Node{}}
	for _, q := range qs {
		if q.Path != path || q.Recipe != "leader" {
			continue
		}
		for i, n := range q.Nodes {
			if n.Status == statusLeads {
				v.Leader = &q.Nodes[i]
			} else {
				v.Followers = append(v.Followers, n)
			}
		}
	}
	return v
}

// age is how long ago t was, to the second (never negative: the server's
// clock may be ahead of ours).
func age(now, t time.Time) string {
	d := now.Sub(t).Round(time.Second)
	if d < 0 {
		d = 0
	}
	return d.String()
}

// writeLocks prints the text view: per queue a header line, then one line
// per node, holders first.
func writeLocks(w io.Writer, v LocksView, now time.Time) {
	if len(v.Queues) == 0 {
		fmt.Fprintf(w, "no lock queues under %s\n", v.Path)
		return
	}
	for i, q := range v.Queues {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s (%s)\n", q.Path, q.Recipe)
		writeNodes(w, q.Nodes, now)
	}
}

func writeNodes(w io.Writer, nodes []Node, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  STATUS\tKIND\tNODE\tSESSION\tAGE\tOWNER")
	for _, n := range nodes {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", n.Status, n.Kind, n.Name, n.Session, age(now, n.Created), n.Owner)
	}
	tw.Flush()
}

// writeLeader prints the leader view.
func writeLeader(w io.Writer, v LeaderView, now time.Time) {
	if v.Leader == nil {
		fmt.Fprintf(w, "%s: no leader (nobody campaigns)\n", v.Path)
		return
	}
	fmt.Fprintf(w, "%s (leader)\n", v.Path)
	writeNodes(w, append([]Node{*v.Leader}, v.Followers...), now)
}

func writeJSON(w io.Writer, v any, indent bool) error {
	enc := json.NewEncoder(w)
	if indent {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(v)
}

// changes lists, as lines for the watch view, how the queues moved from
// before to after: handoffs (a holder left and another holds), grants,
// releases, and nodes that joined or left a queue.
func changes(before, after []Queue) []string {
	type state struct {
		holders, waiters map[string]Node
	}
	index := func(qs []Queue) map[string]state {
		m := map[string]state{}
		for _, q := range qs {
			st := state{map[string]Node{}, map[string]Node{}}
			for _, n := range q.Nodes {
				if holds(n) {
					st.holders[n.Path] = n
				} else {
					st.waiters[n.Path] = n
				}
			}
			m[q.Path+" ("+q.Recipe+")"] = st
		}
		return m
	}
	b, a := index(before), index(after)
	var out []string
	for _, q := range after {
		key := q.Path + " (" + q.Recipe + ")"
		old, now := b[key], a[key]
		var gone, came []string
		for p, n := range old.holders {
			if _, ok := now.holders[p]; !ok {
				gone = append(gone, who(n))
			}
		}
		for _, n := range q.Nodes {
			if _, ok := now.holders[n.Path]; ok {
				if _, ok := old.holders[n.Path]; !ok {
					came = append(came, who(n))
				}
			} else if _, ok := old.waiters[n.Path]; !ok {
				out = append(out, fmt.Sprintf("%s: queued %s", key, who(n)))
			}
		}
		slices.Sort(gone)
		switch {
		case len(gone) > 0 && len(came) > 0:
			out = append(out, fmt.Sprintf("%s: handoff %s -> %s", key, strings.Join(gone, ", "), strings.Join(came, ", ")))
		case len(came) > 0:
			out = append(out, fmt.Sprintf("%s: granted to %s", key, strings.Join(came, ", ")))
		case len(gone) > 0:
			out = append(out, fmt.Sprintf("%s: released by %s", key, strings.Join(gone, ", ")))
		}
		var left []string
		for p, n := range old.waiters {
			_, w := now.waiters[p]
			_, h := now.holders[p]
			if !w && !h {
				left = append(left, fmt.Sprintf("%s: %s left the queue", key, who(n)))
			}
		}
		slices.Sort(left)
		out = append(out, left...)
	}
	for _, q := range before {
		key := q.Path + " (" + q.Recipe + ")"
		if _, ok := a[key]; !ok {
			var gone []string
			for _, n := range q.Nodes {
				gone = append(gone, who(n))
			}
			out = append(out, fmt.Sprintf("%s: free, nobody queued (%s left)", key, strings.Join(gone, ", ")))
		}
	}
	return out
}

func holds(n Node) bool { return n.Status == statusHolds || n.Status == statusLeads }

// who names a node in an event line.
func who(n Node) string { return n.Name + " [" + n.Owner.String() + "]" }
