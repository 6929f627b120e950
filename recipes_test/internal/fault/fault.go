// Package fault is recipes_test's fault harness: the fault run (clients
// of every recipe on a three-server ensemble under a seeded schedule of
// server, connection and session faults, then checks of exclusion,
// liveness and hygiene) and the chaos run (actors calling any public
// operation under the same faults, their histories checked with
// Porcupine). recipes_test's TestFaultRun, TestFaultRunLong and TestChaos
// run them; what each checks is said there.
package fault

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// Environment of the fault runs.
const (
	envFaultSeed     = "ZKRECIPES_FAULT_SEED"     // the run's seed (decimal); replays a schedule
	envFaultDuration = "ZKRECIPES_FAULT_DURATION" // how long faults are injected (Go duration)
	EnvFaultLong     = "ZKRECIPES_FAULT_LONG"     // "1" enables TestFaultRunLong
)

const (
	defaultFaultSeed     = 20250611
	defaultFaultDuration = 90 * time.Second // CI: about 2–3 minutes of wall time in all
	longFaultDuration    = 30 * time.Minute
	longFaultRound       = 5 * time.Minute // the long run is made of rounds this long
)

func defaultFaultConfig() faultConfig {
	return faultConfig{
		clients:        10,
		sessionTimeout: 4 * time.Second,
		liveness:       60 * time.Second,
	}
}

// Run is TestFaultRun's run on c (three servers): seed and length from
// ZKRECIPES_FAULT_SEED and ZKRECIPES_FAULT_DURATION.
func Run(t *testing.T, c *zktest.Cluster) {
	cfg := defaultFaultConfig()
	cfg.seed = envSeed(t, defaultFaultSeed)
	cfg.duration = envDuration(t, defaultFaultDuration)
	t.Logf("fault run: seed %d, faults for %v, %d clients, session timeout %v (replay: %s=%d %s=%v go test -race -run '^TestFaultRun$' ./recipes_test/)",
		cfg.seed, cfg.duration, cfg.clients, cfg.sessionTimeout, envFaultSeed, cfg.seed, envFaultDuration, cfg.duration)
	s := runFaults(t, c, cfg, strconv.FormatUint(cfg.seed, 10))
	s.log(t, cfg.seed)
}

// RunLong is TestFaultRunLong's run on c: rounds of five minutes with
// seeds seed, seed+1, ..., for ZKRECIPES_FAULT_DURATION in all (default 30
// minutes), the seed ZKRECIPES_FAULT_SEED or drawn from the clock.
func RunLong(t *testing.T, c *zktest.Cluster) {
	seed := envSeed(t, uint64(time.Now().UnixNano()%1e9))
	total := envDuration(t, longFaultDuration)
	t.Logf("long fault run: seed %d, faults for %v in rounds of %v", seed, total, longFaultRound)
	sum := newRunStats()
	for round := 0; sum.duration < total && !t.Failed(); round++ {
		cfg := defaultFaultConfig()
		cfg.seed = seed + uint64(round)
		cfg.duration = min(longFaultRound, total-sum.duration)
		t.Run(fmt.Sprintf("round%d-seed%d", round, cfg.seed), func(t *testing.T) {
			t.Logf("round %d: seed %d (replay: %s=%d %s=%v go test -race -run '^TestFaultRun$' ./recipes_test/)",
				round, cfg.seed, envFaultSeed, cfg.seed, envFaultDuration, cfg.duration)
			s := runFaults(t, c, cfg, strconv.FormatUint(cfg.seed, 10))
			s.log(t, cfg.seed)
			sum.add(s)
		})
	}
	sum.log(t, seed)
}

// SkipOrFail skips a fault or chaos run, or fails it under CI=true, where
// a run that does not run must not pass. (TestFaultRunLong's opt-in is not
// a missing prerequisite: CI does not opt in, and it skips there too.)
func SkipOrFail(t *testing.T, why string) {
	t.Helper()
	if zktest.InCI() {
		t.Fatalf("%s (CI=true: a fault run that does not run is a failure, not a skip)", why)
	}
	t.Skip(why)
}

func envSeed(t *testing.T, def uint64) uint64 {
	v := os.Getenv(envFaultSeed)
	if v == "" {
		return def
	}
	seed, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: want a decimal number: %v", envFaultSeed, v, err)
	}
	return seed
}

func envDuration(t *testing.T, def time.Duration) time.Duration {
	v := os.Getenv(envFaultDuration)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive Go duration such as 90s or 2h (%v)", envFaultDuration, v, err)
	}
	return d
}
