package conn_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestIdentity: Ensemble names the servers given to Connect whatever their
// order and repeats; FullPath puts the namespace in front.
func TestIdentity(t *testing.T) {
	c := zktest.New(t)
	srv := c.Servers()[0]
	plain := connect(t, []string{srv})
	twice := connect(t, []string{srv, srv}, conn.WithNamespace(c.Root()))
	assert.Equal(t, srv, connlink.Of(plain).Ensemble())
	assert.Equal(t, connlink.Of(plain).Ensemble(), connlink.Of(twice).Ensemble(), "same servers, repeated")
	assert.Equal(t, "/a/b", connlink.Of(plain).FullPath("/a/b"))
	assert.Equal(t, c.Root()+"/a/b", connlink.Of(twice).FullPath("/a/b"))
	assert.Equal(t, c.Root(), connlink.Of(twice).FullPath("/"))
}
