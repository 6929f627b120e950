#!/usr/bin/env bash
# Server traffic per handoff: for each recipe and each number of clients,
# runs every library that has the recipe (zkrecipes' examples/bench and the
# peers in ../shared/peers: Curator, kazoo, go-zookeeper's zk.Lock) alone
# against one standalone ZooKeeper, and divides the growth of the server's
# mntr zk_packets_sent + zk_packets_received over the run by the number of
# acquisitions (clients × cycles). Session set-up and pings are included,
# for every library alike.
#
#   scripts/bench-traffic.sh [CYCLES] [CLIENT COUNTS] [RECIPES]
#
# Defaults: 100 cycles, "10 100" clients, "mutex semmutex write read".
# PEERS_DIR overrides where the peers are (default ../shared/peers).
set -euo pipefail
cd "$(dirname "$0")/.."
cycles=${1:-100} counts=${2:-"10 100"} recipes=${3:-"mutex semmutex write read"}
build=${PEERS_BUILD:-/tmp/zkrecipes-peers}
. scripts/bench-setup.sh
cp=$("$peers/classpath.sh"):$build

# run LIBRARY RECIPE CLIENTS: one run of one library, its result line on stdout.
run() {
  local lib=$1 recipe=$2 n=$3
  case $lib in
    zkrecipes)
      local ours=$recipe
      [[ $recipe == semmutex ]] && ours=semaphoremutex
      "$bin" -recipe "$ours" -clients "$n" -cycles "$cycles" -servers "$servers" 2>/dev/null ;;
    curator) java -cp "$cp" CuratorBench "$servers" "$recipe" "$n" "$cycles" 2>/dev/null ;;
    kazoo)
      local k=$recipe
      [[ $recipe == semmutex ]] && k=sem
      /usr/bin/python3 "$peers/kazoo/kazoo_bench.py" "$servers" "$k" "$n" "$cycles" 2>/dev/null ;;
    gozk) "$build/gozkbench" "$servers" mutex "$n" "$cycles" 2>/dev/null ;;
  esac
}

echo "# $(date -u +%FT%TZ) $(nproc) cores; server $servers; $cycles cycles per client"
printf '| recipe | library |'
for n in $counts; do printf ' %s clients |' "$n"; done
printf '\n|---|---|'
for n in $counts; do printf -- '---|'; done
echo
for recipe in $recipes; do
  libs="curator kazoo zkrecipes"
  [[ $recipe == mutex ]] && libs="curator kazoo gozk zkrecipes"
  for lib in $libs; do
    printf '| %s | %s |' "$recipe" "$lib"
    for n in $counts; do
      before=$("$peers/mntr.sh" "$servers")
      if line=$(run "$lib" "$recipe" "$n") && [[ $line == *violations=0* ]]; then
        after=$("$peers/mntr.sh" "$servers")
        printf ' %s |' "$(python3 -c "print('%.1f' % (($after - $before) / ($n * $cycles)))")"
      else
        printf ' failed |'
      fi
    done
    echo
  done
done
