package fault

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestFaultRunFigures: a fault run whose faults did not apply, whose
// recipes were not acquired, whose paired recipes were never handed over
// in the process, or whose acquires failed unexpectedly does not pass; one
// with enough of everything does.
func TestFaultRunFigures(t *testing.T) {
	paired := 0
	full := func() runStats {
		s := newRunStats()
		for _, k := range faultKinds {
			s.faults[k] = 2
		}
		paired = 0
		for _, r := range faultRecipes {
			s.underFaults[r.name] = 100
			if r.paired {
				s.localHandoffs[r.name] = 50
				paired++
			}
		}
		return s
	}
	assert.Empty(t, figureProblems(90*time.Second, full()), "enough of everything")
	assert.Positive(t, paired, "no paired recipe")
	assert.Len(t, figureProblems(90*time.Second, newRunStats()), len(faultKinds)+len(faultRecipes)+paired, "nothing done")

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
	s.localHandoffs["mutex-cohort"] = 0
	assert.Len(t, figureProblems(90*time.Second, s), 1, "a paired recipe never handed over in the process")

	s = full()
	s.acquireErrors["mutex: boom"] = 1
	assert.Len(t, figureProblems(90*time.Second, s), 1, "an unexpected acquire error")
}

// TestThirdPartyConflicts: a grant of the domain that starts after a
// third-party write into a holder's node and before the holder released
// (or its session ended) is a conflict; grants outside that window, in
// other domains, or the holder's own are not.
func TestThirdPartyConflicts(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	holder := &interval{client: 1, recipe: "mutex", domain: "mutex", start: at(0), release: at(100)}
	recs := []thirdPartyRec{{hold: holder, at: at(10)}}
	grant := func(client int, domain string, ms int) *interval {
		return &interval{client: client, recipe: domain, domain: domain, start: at(ms), release: at(ms + 50)}
	}
	assert.Len(t, thirdPartyConflicts(recs, []*interval{holder, grant(2, "mutex", 13)}), 1, "granted behind the write")
	assert.Empty(t, thirdPartyConflicts(recs, []*interval{holder, grant(2, "mutex", 101)}), "granted after the release")
	assert.Empty(t, thirdPartyConflicts(recs, []*interval{holder, grant(2, "mutex", 5)}), "before the write (another check's business)")
	assert.Empty(t, thirdPartyConflicts(recs, []*interval{holder, grant(2, "rwlock", 13)}), "another domain")

	ended := *holder
	ended.ended = at(12) // its session ended: the node went with it
	assert.Empty(t, thirdPartyConflicts([]thirdPartyRec{{hold: &ended, at: at(10)}}, []*interval{&ended, grant(2, "mutex", 13)}))
	expired := *holder
	expired.expired = at(12)
	assert.Empty(t, thirdPartyConflicts([]thirdPartyRec{{hold: &expired, at: at(10)}}, []*interval{&expired, grant(2, "mutex", 13)}))
}
