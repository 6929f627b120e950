#!/usr/bin/env bash
# Measures what waiters and held locks cost in one process (issue 18's
# flash sale) with bench/scale, on a fresh standalone ZooKeeper from
# Debian's jars, for N = 100, 1,000 and 10,000: N goroutines of one session
# queued on one lock that another session holds (each recipe that queues),
# one session holding N distinct mutexes, and Apache Curator 5.4's
# InterProcessMutex with N threads of one JVM (one CuratorFramework) queued
# the same way. One line per recipe and N (see bench/scale/main.go for the
# fields): heap and goroutine stacks per waiter, goroutines per waiter,
# time to queue them all, drain rate after the holder's release, bytes and
# packets the server sent per waiter; for Curator the JVM's RSS and threads
# per waiter and where it was stopped when it reached its cap. Runs from a
# clone, like bench-peers.sh: scripts/bench-setup.sh installs the Debian
# packages it lacks, builds everything and starts the server. The header
# says the machine's load: only figures of one quiet run compare well.
#
#   scripts/bench-scale.sh [NS] [RECIPES]
#
# Defaults: NS "100,1000,10000", RECIPES
# "mutex,read,write,semmutex,semaphore,leader,multilock,held,curator".
# SCALE_TIMEOUT bounds each step (default 10m); SCALE_CURATOR_CAP is the
# time after which Curator's JVM is killed (default 180s; seconds, or a Go
# duration such as 3m). With SCALE_CHART=FILE (.svg, .png or .pdf) it draws
# the chart of docs/benchmarks.md from the run's lines with
# examples/scalechart. Exits 1 when a step failed. Before the measured run
# one unrecorded pass (N 1000, mutex and read) warms the fresh server's JIT
# up; SCALE_WARMUP=0 skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
case ${1:-} in -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
ns=${1:-100,1000,10000}
recipes=${2:-mutex,read,write,semmutex,semaphore,leader,multilock,held,curator}
cap=${SCALE_CURATOR_CAP:-180s}
[[ $cap =~ ^[0-9]+$ ]] && cap=${cap}s
ensemble=0
. scripts/bench-setup.sh

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
java=$(java -version 2>&1 | head -1)
rc=0
if [[ ${SCALE_WARMUP:-1} != 0 ]]; then
  "$build/scale" -servers "$servers" -n 1000 -recipes mutex,read -timeout "${SCALE_TIMEOUT:-10m}" \
    -curator-cp "$classpath" -curator-cap "$cap" >/dev/null || { echo "warm-up failed" >&2; exit 1; }
fi
{
  echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); ZooKeeper $(dpkg-query -W -f='${Version}' zookeeper) $scenario; $java; commit $commit; N $ns; Curator cap $cap; warm-up ${SCALE_WARMUP:-1}"
  "$build/scale" -servers "$servers" -n "$ns" -recipes "$recipes" -timeout "${SCALE_TIMEOUT:-10m}" \
    -curator-cp "$classpath" -curator-cap "$cap"
} | tee "$build/results" || rc=$?
if [[ -n ${SCALE_CHART:-} ]]; then
  go run ./examples/scalechart -out "$SCALE_CHART" <"$build/results" || rc=1
fi
exit $rc
