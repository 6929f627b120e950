#!/usr/bin/env bash
# demo.sh runs the flash-sale demo (examples/seckill) on a fresh machine:
# first scripts/prereqs.sh --demo, which installs a ZooKeeper (Debian's
# zookeeper package) only if none is available and says so, then
#
#   go run ./examples/seckill "$@"
#
# The stock is kept in an SQLite file (a pure-Go driver: nothing to
# install). With --postgres it is kept in PostgreSQL: the server given by
# -db postgres://..., or else one started for the run from Debian's
# postgresql package, which prereqs.sh --demo --postgres installs if
# missing.
#
# Usage: scripts/demo.sh [--postgres] [flags of the example; -h lists them]
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ${1:-} == --postgres ]]; then
  shift
  scripts/prereqs.sh --demo --postgres
  case " $* " in
    *" -db "* | *" -db="* | *" --db "* | *" --db="*) exec go run ./examples/seckill "$@" ;;
  esac
  exec go run ./examples/seckill -db postgres "$@"
fi
scripts/prereqs.sh --demo
exec go run ./examples/seckill "$@"
