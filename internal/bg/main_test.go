package bg

import (
	"testing"

	"go.uber.org/goleak"
)

// The tests leave no goroutine running (a stopped GraceContext included).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
