package fault

import (
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/assert"

	"github.com/zkrecipes/zkrecipes/conn"
)

// TestChaosRegisterModel checks the chaos run's Porcupine model without a
// server: read-modify-writes one after another are linearizable, two
// that read the same value and both applied (a lost update: two holders)
// are not, and one whose fate is unknown may or may not have been applied.
func TestChaosRegisterModel(t *testing.T) {
	model := registerModel.ToModel()
	rmw := func(client int, read int64, call, ret int64, st regStatus) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: regInput{store: "znode", domain: "d", rmw: true, read: read},
			Output: st, Call: call, Return: ret}
	}
	read := func(client int, v int64, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: regInput{store: "znode", domain: "d", read: v},
			Output: regOK, Call: call, Return: ret}
	}
	assert.True(t, porcupine.CheckOperations(model, []porcupine.Operation{
		rmw(0, 0, 0, 10, regOK), rmw(1, 1, 20, 30, regOK), read(2, 2, 40, 50)}), "one after another")
	assert.False(t, porcupine.CheckOperations(model, []porcupine.Operation{
		rmw(0, 0, 0, 10, regOK), rmw(1, 0, 5, 30, regOK)}), "a lost update")
	assert.False(t, porcupine.CheckOperations(model, []porcupine.Operation{
		rmw(0, 0, 0, 10, regOK), read(1, 0, 20, 30)}), "a stale read after a write")
	forever := int64(1 << 62)
	assert.True(t, porcupine.CheckOperations(model, []porcupine.Operation{
		rmw(0, 0, 0, forever, regUnknown), rmw(1, 0, 20, 30, regOK)}), "unknown, not applied")
	assert.True(t, porcupine.CheckOperations(model, []porcupine.Operation{
		rmw(0, 0, 0, forever, regUnknown), rmw(1, 1, 20, 30, regOK)}), "unknown, applied")
	assert.False(t, porcupine.CheckOperations(model, []porcupine.Operation{
		rmw(0, 0, 0, forever, regUnknown), rmw(1, 2, 20, 30, regOK)}), "unknown cannot add two")
}

// TestFencedStore: the store refuses an operation whose fence is below
// the greatest it has seen, and admits equal and greater ones, local
// handoffs (same Zxid, greater Pass) included.
func TestFencedStore(t *testing.T) {
	var s fencedStore
	_, ok := s.read(conn.Fence{Zxid: 10})
	assert.True(t, ok)
	assert.True(t, s.write(conn.Fence{Zxid: 10}, 1))
	assert.True(t, s.write(conn.Fence{Zxid: 10, Pass: 1}, 2), "a local handoff's grant")
	assert.False(t, s.write(conn.Fence{Zxid: 10}, 3), "the grant before it")
	_, ok = s.read(conn.Fence{Zxid: 9, Pass: 5})
	assert.False(t, ok, "an older node")
	v, ok := s.read(conn.Fence{Zxid: 11})
	assert.True(t, ok)
	assert.EqualValues(t, 2, v)
}
