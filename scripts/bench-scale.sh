#!/usr/bin/env bash
# Measures what waiters and held locks cost in one process (issue 18's
# flash sale) with bench/scale, on a fresh standalone ZooKeeper from
# Debian's jars (scripts/zk-standalone.sh), for N = 100, 1,000 and 10,000:
# N goroutines of one session queued on one lock that another session
# holds (each recipe that queues), and one session holding N distinct
# mutexes. One line per recipe and N (see bench/scale/main.go for the
# fields): heap and goroutine stacks per waiter, goroutines per waiter,
# time to queue them all, drain rate after the holder's release, bytes and
# packets the server sent per waiter. Runs from a clone, like
# bench-peers.sh; needs Go and the zookeeper package (installed when
# missing). The header says the machine's load: only figures of one quiet
# run compare well.
#
#   scripts/bench-scale.sh [NS] [RECIPES]
#
# Defaults: NS "100,1000,10000", RECIPES
# "mutex,read,write,semmutex,semaphore,leader,multilock,held".
# SCALE_TIMEOUT bounds each step (default 10m). Exits 1 when a step failed.
set -euo pipefail
cd "$(dirname "$0")/.."
case ${1:-} in -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
ns=${1:-100,1000,10000}
recipes=${2:-mutex,read,write,semmutex,semaphore,leader,multilock,held}

if [[ $(dpkg-query -W -f='${Status}' zookeeper 2>/dev/null) != "install ok installed" ]]; then
  echo "installing Debian's zookeeper" >&2
  sudo=(); ((EUID == 0)) || sudo=(sudo)
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q install -y zookeeper >&2 ||
    { "${sudo[@]}" apt-get -q update >&2 && "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q install -y zookeeper >&2; }
fi

build=$(mktemp -d /tmp/zkrecipes-scale-XXXX)
zk_pid=""
trap 'kill -9 $zk_pid 2>/dev/null || true; rm -rf "$build"' EXIT
go build -o "$build/scale" ./bench/scale

for _ in 1 2 3; do
  port=$((20000 + RANDOM % 20000))
  timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null && continue
  zk_pid=$(scripts/zk-standalone.sh "$port" </dev/null) && break
done
[[ -n $zk_pid ]] || { echo "could not start ZooKeeper" >&2; exit 1; }

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); ZooKeeper $(dpkg-query -W -f='${Version}' zookeeper) standalone; commit $commit; N $ns"
"$build/scale" -servers "127.0.0.1:$port" -n "$ns" -recipes "$recipes" -timeout "${SCALE_TIMEOUT:-10m}"
