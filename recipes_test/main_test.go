// Package recipes_test holds integration, fault and interop tests that span
// several recipes, against a real ZooKeeper.
package recipes_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
