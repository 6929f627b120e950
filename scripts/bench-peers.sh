#!/usr/bin/env bash
# Runs zkrecipes' benchmark (examples/bench) and the peer benchmarks in
# ../shared/peers (Apache Curator 5.4, kazoo 2.8, go-zookeeper's zk.Lock)
# side by side on one standalone ZooKeeper, with the same load, ROUNDS times
# in alternation, and prints every result line and then the medians with
# ratios (zkrecipes / peer). Machines here are noisy: only ratios measured
# in one run mean anything.
#
#   scripts/bench-peers.sh [CLIENTS] [CYCLES] [ROUNDS] [RECIPES]
#
# Defaults: 10 clients, 100 cycles, 3 rounds, "mutex semmutex write read".
# PEERS_DIR overrides where the peers are (default ../shared/peers).
set -euo pipefail
cd "$(dirname "$0")/.."
clients=${1:-10} cycles=${2:-100} rounds=${3:-3} recipes=${4:-"mutex semmutex write read"}
. scripts/bench-setup.sh

results=$(mktemp)
echo "# $(date -u +%FT%TZ) $(nproc) cores; ZooKeeper $(cd /usr/share/java && ls zookeeper-3*.jar 2>/dev/null | head -1); server $servers; $clients clients x $cycles cycles, $rounds rounds" | tee "$results"
for ((r = 1; r <= rounds; r++)); do
  for recipe in $recipes; do
    ours=$recipe; [[ $recipe == semmutex ]] && ours=semaphoremutex
    "$peers/run.sh" "$servers" "$recipe" "$clients" "$cycles" 2>/dev/null | grep -E '^[a-z]+ ' | sed "s/^kazoo sem /kazoo semmutex /" | tee -a "$results"
    "$bin" -recipe "$ours" -clients "$clients" -cycles "$cycles" -servers "$servers" 2>/dev/null |
      sed "s/^zkrecipes semaphoremutex/zkrecipes semmutex/" | tee -a "$results"
  done
done

python3 - "$results" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\w+) (\w+) .*handoffs_per_s=([\d.]+) p50_ms=([\d.]+) p99_ms=([\d.]+) violations=(\d+)", line)
    if m:
        peer, recipe = m.group(1), m.group(2)
        r = rows.setdefault((recipe, peer), {"hps": [], "p50": [], "p99": [], "viol": 0})
        r["hps"].append(float(m.group(3))); r["p50"].append(float(m.group(4))); r["p99"].append(float(m.group(5)))
        r["viol"] += int(m.group(6))
print("\n| recipe | library | handoffs/s (median) | p50 ms | p99 ms | violations | zkrecipes handoffs/s ÷ this |")
print("|---|---|---|---|---|---|---|")
for recipe in dict.fromkeys(k[0] for k in rows):
    ours = rows.get((recipe, "zkrecipes"))
    for (rc, peer), r in rows.items():
        if rc != recipe:
            continue
        hps = statistics.median(r["hps"])
        ratio = "—" if peer == "zkrecipes" or not ours else "%.2f×" % (statistics.median(ours["hps"]) / hps)
        print("| %s | %s | %.0f | %.1f | %.1f | %d | %s |" % (recipe, peer, hps, statistics.median(r["p50"]), statistics.median(r["p99"]), r["viol"], ratio))
PY
