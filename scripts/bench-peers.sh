#!/usr/bin/env bash
# Runs zkrecipes' benchmark (examples/bench) and the peer benchmarks of
# bench/peers (Apache Curator 5.4, kazoo 2.8, go-zookeeper's zk.Lock) side by
# side on one ZooKeeper, with the same load, ROUNDS times in alternation, and
# each round also the server's own sequential rate (bench/limit: one client,
# set-data writes and create+delete pairs one after another). Prints every
# result line, then the medians across rounds with the spread (min–max), the
# ratios zkrecipes / each peer and each figure / the limit. Machines are
# noisy: only ratios measured in one run mean anything.
#
#   scripts/bench-peers.sh [--ensemble] [CLIENTS] [CYCLES] [ROUNDS] [RECIPES]
#
# Defaults: 10 clients, 100 cycles, 3 rounds, "mutex semmutex write read";
# a standalone server, or with --ensemble a three-node ensemble on this
# machine. It needs nothing beside the repository: scripts/bench-setup.sh
# installs the Debian packages it lacks and builds everything. Exits 1 when
# a run failed or found a violation.
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
clients=${args[0]:-10} cycles=${args[1]:-100} rounds=${args[2]:-3} recipes=${args[3]:-"mutex semmutex write read"}
. scripts/bench-setup.sh

results=$build/results
echo "# $(date -u +%FT%TZ) $(nproc) cores; ZooKeeper $(dpkg-query -W -f='${Version}' zookeeper) $scenario $servers; $clients clients x $cycles cycles; rounds: $rounds"
failed=0
for ((r = 1; r <= rounds; r++)); do
  if out=$(run_limit $((clients * cycles))); then
    echo "$out"
    sed "s/^/$r /" <<<"$out" >>"$results"
  else
    echo "limit: failed (round $r): $(tail -3 "$build/limit.log")" >&2
    failed=1
  fi
  for recipe in $recipes; do
    libs=$(libs_for "$recipe")
    ((r % 2)) || libs=$(tr ' ' '\n' <<<"$libs" | tac | xargs) # alternate the order
    for lib in $libs; do
      if line=$(run_lib "$lib" "$recipe" "$clients" "$cycles") && [[ -n $line ]]; then
        echo "$line"
        echo "$r $line" >>"$results"
      else
        echo "$lib $recipe: failed (round $r): $(tail -3 "$build/$lib-$recipe.log")" >&2
        failed=1
      fi
    done
  done
done

python3 - "$results" <<'PY' || failed=1
import re, statistics, sys
runs, limits = {}, {}  # (recipe, library) -> {round: fields}; kind -> {round: fields}
for line in open(sys.argv[1]):
    m = re.match(r"(\d+) limit (\w+) .*ops_per_s=([\d.]+) p50_ms=([\d.]+) p99_ms=([\d.]+)", line)
    if m:
        limits.setdefault(m[2], {})[int(m[1])] = tuple(float(x) for x in m.groups()[2:])
        continue
    m = re.match(r"(\d+) (\w+) (\w+) .*handoffs_per_s=([\d.]+) p50_ms=([\d.]+) p99_ms=([\d.]+) violations=(\d+)", line)
    if m:
        runs.setdefault((m[3], m[2]), {})[int(m[1])] = tuple(float(x) for x in m.groups()[3:])

def spread(xs, fmt):
    xs = sorted(xs)
    if not xs:
        return "—"
    s = fmt % statistics.median(xs)
    return s if len(xs) == 1 else "%s (%s–%s)" % (s, fmt % xs[0], fmt % xs[-1])

def ratios(a, b):  # a / b per round, over the rounds both have
    return [a[r][0] / b[r][0] for r in a if r in b and b[r][0] > 0]

names = {"setdata": "set-data writes", "createdelete": "create+delete pairs"}
print("\nlimit: one client, each request after the previous reply; medians across rounds (min–max)\n")
print("| limit | ops/s | p50 ms | p99 ms |")
print("|---|---|---|---|")
for kind, rs in limits.items():
    v = list(rs.values())
    print("| %s | %s | %.2f | %.2f |" % (names.get(kind, kind), spread([x[0] for x in v], "%.0f"),
                                        statistics.median(x[1] for x in v), statistics.median(x[2] for x in v)))

writes, pairs = limits.get("setdata", {}), limits.get("createdelete", {})
print("\nhandoffs: medians across rounds (min–max); ratios per round, then their median (min–max)\n")
print("| recipe | library | handoffs/s | p50 ms | p99 ms | violations | zkrecipes ÷ this | ÷ limit: set-data/s | ÷ limit: create+delete pairs/s |")
print("|---|---|---|---|---|---|---|---|---|")
violations = 0
for recipe in dict.fromkeys(k[0] for k in runs):
    ours = runs.get((recipe, "zkrecipes"), {})
    for (rc, lib), rs in runs.items():
        if rc != recipe:
            continue
        v = list(rs.values())
        viol = int(sum(x[3] for x in v))
        violations += viol
        vs = "—" if lib == "zkrecipes" else spread(ratios(ours, rs), "%.2f×")
        print("| %s | %s | %s | %.2f | %.2f | %d | %s | %s | %s |" % (
            recipe, lib, spread([x[0] for x in v], "%.0f"), statistics.median(x[1] for x in v),
            statistics.median(x[2] for x in v), viol, vs, spread(ratios(rs, writes), "%.2f"),
            spread(ratios(rs, pairs), "%.2f")))
sys.exit(1 if violations else 0)
PY
exit $failed
