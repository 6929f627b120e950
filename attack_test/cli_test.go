package attack_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestZkrecipesHelpNamesKeptAndLabel: `zkrecipes --help` lists the
// statuses and owners each node may show; the command prints `kept` (a
// write node kept after a downgrade, README and docs/operations.md) and the
// owner's `label=` (lock.WithLabel), so its help must name both.
func TestZkrecipesHelpNamesKeptAndLabel(t *testing.T) {
	bin := zkrecipesBin(t)
	if bin == "" {
		t.Skip("no zkrecipes binary")
	}
	out, _ := exec.Command(bin, "--help").CombinedOutput()
	for _, w := range []string{"kept", "label"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("zkrecipes --help does not mention %q:\n%s", w, firstLines(string(out), 8))
		}
	}
}

func firstLines(s string, n int) string {
	l := strings.SplitN(s, "\n", n+1)
	if len(l) > n {
		l = l[:n]
	}
	return strings.Join(l, "\n")
}
