#!/usr/bin/env bash
# The project's test command, run by developers (see README.md) and by CI
# (.ci/run). Extra arguments are passed to `go test` before the packages,
# e.g. scripts/test.sh -run TestEnsemble -v
#
# Tests need a real ZooKeeper; package zktest finds one (ZK_SERVERS, Docker
# with ZK_IMAGE, or a local ZooKeeper install). Under CI=true a missing
# prerequisite fails the tests instead of skipping them.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go test -race -count=1 -timeout 45m "$@" ./...
