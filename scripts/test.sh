#!/usr/bin/env bash
# The project's test command, run by developers (see README.md) and by CI
# (.ci/run). Extra arguments are passed to `go test` before the packages,
# e.g. scripts/test.sh -run TestEnsemble -v
#
# Tests need a real ZooKeeper; package zktest finds one (ZK_SERVERS, Docker
# with ZK_IMAGE, or a local ZooKeeper install). Under CI=true a missing
# prerequisite fails the tests instead of skipping them.
#
# Four steps, all with the race detector: everything but the randomized
# fault run (recipes_test TestFaultRun) and the randomized chaos run
# (recipes_test TestChaos), on the local backend (the docker driver's own
# tests, module zktest/docker, force docker); recipes_test once more with
# ZK_BACKEND=docker, through the testcontainers-go driver: the fault run (an
# ensemble killed, paused and restarted) and the short suites, but not the
# chaos run, the herd and hostile-input suites (long, one server, no server
# fault) nor the interop tests (Curator's and kazoo's clients are what they
# test), about 4 minutes (DOCKER_SKIP, a -skip pattern, changes the choice);
# then the fault run and the chaos run (local), each on its own, with its
# own timeout (the chaos run: 2 minutes of actors and faults, about 3 minutes
# in all; ZKRECIPES_CHAOS_DURATION and ZKRECIPES_CHAOS_SEED change it, see
# docs/safety.md). Last, alone on the machine, the client CPU guard
# (bench TestClientCPUPerHandoffGuard, about a minute): other tests running
# beside it move its ratio by a quarter either way. (The fault run used to run without -race because of go-zookeeper
# v1.0.4's lastZxid race; conn/wire.go now makes that race impossible, see
# conn's TestReconnectWithWatchesIsRaceFree.)
set -euo pipefail

# The repository is several modules joined by go.work (the library at the
# root and those go.work lists); every step covers them all
# ($all_packages, scripts/tools.sh: `./...` would match the root module's
# packages only).
#
# Before the tests:
#   1. scripts/prereqs.sh installs or builds what is missing (Debian packages,
#      the image zkrecipes/zookeeper:3.8-debian, Go modules, the Go tools of
#      scripts/tools.sh) and says what it did; SKIP_PREREQS=1 skips it;
#   2. go vet, then staticcheck (honnef.co/go/tools v0.8.2, through go run);
#   3. scripts/fuzz.sh: every fuzz target for FUZZTIME (default 10s), unless
#      FUZZTIME=0 or arguments for go test are given (a focused run).
# The tests include TestUserModuleGraph (modgraph_test.go): a module outside
# the repository importing every library package lists at most 14 modules,
# none of Docker, testcontainers or plotting.
# ZK_IMAGE defaults to the image prereqs.sh builds, so that the docker
# backend has an image without a registry. Without a registry (ZK_PULL=never)
# Ryuk's image cannot be had either: Ryuk is turned off, and the driver's
# label reaper removes what a killed test binary left when the next docker
# cluster starts.
export ZK_IMAGE=${ZK_IMAGE:-zkrecipes/zookeeper:3.8-debian}
if [[ ${ZK_PULL:-} == never ]]; then
  export TESTCONTAINERS_RYUK_DISABLED=${TESTCONTAINERS_RYUK_DISABLED:-true}
fi
backend=${ZK_BACKEND:-local}
docker_skip=${DOCKER_SKIP:-'^(TestChaos|TestHerdEffect|TestHostileInput|TestInteropWithCuratorAndKazoo|TestLeaderInteropWithCuratorLatch|TestCuratorRevoker|TestRevokeCuratorHolder)$'}
timed() {
  local t0=$SECONDS
  echo "=== test.sh: $*"
  "$@"
  echo "=== test.sh: $* done in $((SECONDS - t0)) s"
}
. "$(dirname "$0")/tools.sh"
(
  cd "$(dirname "$0")/.."
  if [[ ${SKIP_PREREQS:-} != 1 ]]; then timed scripts/prereqs.sh; fi
  timed go vet "$all_packages"
  timed go_tool "$staticcheck" "$all_packages"
  if [[ ${FUZZTIME:-10s} != 0 && $# -eq 0 ]]; then timed scripts/fuzz.sh; fi
)
echo "=== test.sh: go test"
cd "$(dirname "$0")/.."
ZK_BACKEND=$backend go test -race -count=1 -timeout 45m -skip '^(TestFaultRun|TestChaos|TestClientCPUPerHandoffGuard)$' "$@" "$all_packages"
if [[ $# -eq 0 ]]; then # not in a focused run
  timed env ZK_BACKEND=docker go test -race -count=1 -timeout 20m -skip "$docker_skip" ./recipes_test/
fi
ZK_BACKEND=$backend go test -race -count=1 -timeout 30m -run '^TestFaultRun$' "$@" ./recipes_test/
ZK_BACKEND=$backend go test -race -count=1 -timeout 30m -run '^TestChaos$' "$@" ./recipes_test/
ZK_BACKEND=$backend go test -race -count=1 -timeout 10m -run '^TestClientCPUPerHandoffGuard$' "$@" ./bench/
