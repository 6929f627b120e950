#!/usr/bin/env bash
# Server traffic per handoff: for each recipe and each number of clients,
# runs every library that has the recipe (zkrecipes' examples/bench and the
# peer benchmarks of bench/peers: Curator, kazoo, go-zookeeper's zk.Lock)
# alone against one ZooKeeper, and divides the growth of the servers' mntr
# zk_packets_sent + zk_packets_received over the run by the number of
# acquisitions (clients × cycles). Session set-up and pings are included,
# for every library alike.
#
#   scripts/bench-traffic.sh [--ensemble] [CYCLES] [CLIENT COUNTS] [RECIPES]
#
# Defaults: 100 cycles, "10 100" clients, "mutex semmutex write read"; a
# standalone server, or with --ensemble a three-node ensemble (the packets
# of all three servers are summed). Like bench-peers.sh it needs nothing
# beside the repository (scripts/bench-setup.sh). Exits 1 when a run failed.
set -euo pipefail
cd "$(dirname "$0")/.."
ensemble=0
args=()
for a in "$@"; do
  case $a in
    --ensemble) ensemble=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$a") ;;
  esac
done
cycles=${args[0]:-100} counts=${args[1]:-"10 100"} recipes=${args[2]:-"mutex semmutex write read"}
. scripts/bench-setup.sh

echo "# $(date -u +%FT%TZ) $(nproc) cores; ZooKeeper $(dpkg-query -W -f='${Version}' zookeeper) $scenario $servers; $cycles cycles per client"
printf '| recipe | library |'
for n in $counts; do printf ' %s clients |' "$n"; done
printf '\n|---|---|'
for n in $counts; do printf -- '---|'; done
echo
failed=0
for recipe in $recipes; do
  for lib in $(libs_for "$recipe"); do
    printf '| %s | %s |' "$recipe" "$lib"
    for n in $counts; do
      before=$(packets)
      if line=$(run_lib "$lib" "$recipe" "$n" "$cycles") && [[ $line == *violations=0* ]]; then
        after=$(packets)
        printf ' %s |' "$(/usr/bin/python3 -c "print('%.1f' % (($after - $before) / ($n * $cycles)))")"
      else
        printf ' failed |'
        echo "$lib $recipe $n clients: failed: $line $(tail -3 "$build/$lib-$recipe.log")" >&2
        failed=1
      fi
    done
    echo
  done
done
exit $failed
