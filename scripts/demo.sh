#!/usr/bin/env bash
# demo.sh runs the flash-sale demo (examples/seckill) on a fresh machine:
# first scripts/prereqs.sh --demo, which installs a ZooKeeper (Debian's
# zookeeper package) only if none is available and says so, then
#
#   go run ./examples/seckill "$@"
#
# Usage: scripts/demo.sh [flags of the example; -h lists them]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/prereqs.sh --demo
exec go run ./examples/seckill "$@"
