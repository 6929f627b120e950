#!/usr/bin/env bash
# The project's test command, run by developers (see README.md) and by CI
# (.ci/run). Extra arguments are passed to `go test` before the packages,
# e.g. scripts/test.sh -run TestEnsemble -v
#
# Tests need a real ZooKeeper; package zktest finds one (ZK_SERVERS, Docker
# with ZK_IMAGE, or a local ZooKeeper install). Under CI=true a missing
# prerequisite fails the tests instead of skipping them.
#
# Two steps. Everything runs with the race detector except the randomized
# fault run (recipes_test TestFaultRun): it reconnects clients with watches
# set hundreds of times, which trips a known data race inside go-zookeeper
# v1.0.4 itself (Conn.lastZxid written by recvLoop, read by sendSetWatches;
# unfixed in the latest release), not in this module. It runs in a second
# step without the race detector, so that race cannot fail CI at random.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -race -count=1 -timeout 45m -skip '^TestFaultRun$' "$@" ./...
go test -count=1 -timeout 20m -run '^TestFaultRun$' "$@" ./recipes_test/
