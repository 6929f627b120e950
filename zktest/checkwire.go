package zktest

import (
	"context"
	"fmt"
	"slices"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
)

// CheckWire checks, against a real server, that the go-zookeeper the
// program links keeps what conn's wire layer relies on in v1.0.4 (frames,
// the connect handshake, watches across a reconnect, the close request).
// Run it in a test of a program that replaces go-zookeeper
// (conn.WithPatchedZK). It returns nil or an error matching
// conn.ErrZKVersion that lists what does not hold; it creates one ephemeral
// node and cuts the connection once. ctx bounds it all, the connect too.
func CheckWire(ctx context.Context, servers []string, opts ...conn.Option) error {
	if !slices.ContainsFunc(opts, func(o conn.Option) bool { return connlink.OptionName(o) == "conn.WithPatchedZK" }) {
		opts = append(opts[:len(opts):len(opts)], conn.WithPatchedZK())
	}
	s, err := conn.Connect(ctx, servers, opts...)
	if err != nil {
		return fmt.Errorf("zktest: check wire: %w", err)
	}
	if err := connlink.Of(s).CheckWire(ctx); err != nil {
		return fmt.Errorf("zktest: check wire: %w", err)
	}
	return nil
}
