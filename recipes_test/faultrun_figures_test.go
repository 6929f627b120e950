package recipes_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestFaultRunFigures: a fault run whose faults did not apply, whose
// recipes were not acquired, or whose acquires failed unexpectedly does
// not pass; one with enough of everything does.
func TestFaultRunFigures(t *testing.T) {
	full := func() runStats {
		s := newRunStats()
		for _, k := range faultKinds {
			s.faults[k] = 2
		}
		for _, r := range faultRecipes {
			s.underFaults[r.name] = 100
		}
		return s
	}
	assert.Empty(t, figureProblems(90*time.Second, full()), "enough of everything")
	assert.Len(t, figureProblems(90*time.Second, newRunStats()), len(faultKinds)+len(faultRecipes), "nothing done")

	s := full()
	s.faults[faultThirdParty] = 0
	s.notApplied[faultThirdParty] = 3
	assert.Len(t, figureProblems(90*time.Second, s), 1, "a kind never applied")

	s = full()
	s.notApplied[faultExpire] = 3
	assert.Len(t, figureProblems(90*time.Second, s), 1, "a kind applied less often than not")

	s = full()
	assert.Len(t, figureProblems(5*time.Minute, s), len(faultKinds), "a longer run needs more faults per kind")

	s = full()
	s.underFaults["semmutex"] = 3
	assert.Len(t, figureProblems(90*time.Second, s), 1, "a recipe hardly acquired")

	s = full()
	s.acquireErrors["mutex: boom"] = 1
	assert.Len(t, figureProblems(90*time.Second, s), 1, "an unexpected acquire error")
}
