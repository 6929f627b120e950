package conn_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestIdentity: Ensemble names the servers given to Connect whatever their
// order and repeats; FullPath puts the namespace in front.
func TestIdentity(t *testing.T) {
	c := zktest.New(t)
	srv := c.Servers()[0]
	plain := connect(t, []string{srv})
	twice := connect(t, []string{srv, srv}, conn.WithNamespace(c.Root()))
	assert.Equal(t, srv, plain.Ensemble())
	assert.Equal(t, plain.Ensemble(), twice.Ensemble(), "same servers, repeated")
	assert.Equal(t, "/a/b", plain.FullPath("/a/b"))
	assert.Equal(t, c.Root()+"/a/b", twice.FullPath("/a/b"))
	assert.Equal(t, c.Root(), twice.FullPath("/"))
}
