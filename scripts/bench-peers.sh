#!/usr/bin/env bash
# Runs zkrecipes' benchmark (examples/bench) and the peer benchmarks of
# bench/peers (Apache Curator 5.4, kazoo 2.8, go-zookeeper's zk.Lock) side by
# side on one ZooKeeper, with the same load, ROUNDS times in alternation, and
# each round also the server's own sequential rate (bench/limit: one client,
# set-data writes and create+delete pairs one after another). Prints every
# result line, then the medians across rounds with the spread (min–max), the
# ratios zkrecipes / each peer (in handoffs/s, in p99 and in server CPU per
# handoff, taken round by round) and each figure / the limit, and the
# servers' CPU time per handoff of each run (their processes' user+system
# time over the run, divided by its acquisitions: what a handoff costs the
# servers, whatever else the machine does; the servers of one run all
# count, so an ensemble's figure is three servers' time), and the part of it
# their JIT compilers took (server_jit_ms: compiling code paths not yet hot,
# which a warm server no longer pays). Machines are
# noisy: only ratios measured in one run mean anything.
#
# A fresh ZooKeeper runs its first requests slowly while its JIT compiles
# them (up to 2x), so whoever ran first would lose: WARMUP rounds (default
# 1) run every library and the limit once before the measured rounds, and
# are not counted. WARMUP=0 measures a cold server (to see the difference).
#
#   scripts/bench-peers.sh [--ensemble] [CLIENTS] [CYCLES] [ROUNDS] [RECIPES] [THREADS]
#
# Defaults: 10 clients, 100 cycles, 3 rounds, "mutex semmutex write read",
# 1 thread per client. THREADS above 1 is the same-process scenario (mutex;
# Curator, zk.Lock and zkrecipes): each client's THREADS threads share its
# session; ZKBENCH_FLAGS passes flags to examples/bench (e.g.
# ZKBENCH_FLAGS="-local-handoff 100 -probe"; the probe's longest wait is in
# $build/zkrecipes-mutex.log). The limit runs CLIENTS x THREADS x CYCLES ops.
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
clients=${args[0]:-10} cycles=${args[1]:-100} rounds=${args[2]:-3} recipes=${args[3]:-"mutex semmutex write read"} threads=${args[4]:-1}
. scripts/bench-setup.sh

results=$build/results
warmup=${WARMUP:-1}
echo "# $(date -u +%FT%TZ) $(nproc) cores; ZooKeeper $(dpkg-query -W -f='${Version}' zookeeper) $scenario $servers; $clients clients x $threads threads x $cycles cycles; rounds: $rounds after $warmup warm-up round(s)"
failed=0
# Rounds 1-warmup..0 warm the servers up: printed with "warm-up", not kept.
for ((r = 1 - warmup; r <= rounds; r++)); do
  keep() { if ((r > 0)); then sed "s/^/$r /" >>"$results"; else cat >/dev/null; fi; }
  tag=""
  ((r > 0)) || tag="warm-up "
  if out=$(run_limit $((clients * threads * cycles))); then
    echo "$tag$out"
    keep <<<"$out"
  else
    echo "limit: failed (round $r): $(tail -3 "$build/limit.log")" >&2
    failed=1
  fi
  for recipe in $recipes; do
    libs=$(libs_for "$recipe" "$threads")
    if [[ -n ${LIBS:-} ]]; then
      libs=$(for l in $libs; do [[ " $LIBS " == *" $l "* ]] && echo "$l"; done | xargs)
    fi
    ((r % 2)) || libs=$(tr ' ' '\n' <<<"$libs" | tac | xargs) # alternate the order
    for lib in $libs; do
      cpu0=$(server_cpu) jit0=$(server_jit)
      if line=$(run_lib "$lib" "$recipe" "$clients" "$cycles" "$threads") && [[ -n $line ]]; then
        # the servers' CPU time over the run, per handoff (ms)
        per() { awk -v t="$1" -v hz="$(getconf CLK_TCK)" -v n=$((clients * threads * cycles)) 'BEGIN { printf "%.3f", t * 1000 / hz / n }'; }
        line+=" server_cpu_ms=$(per $(($(server_cpu) - cpu0))) server_jit_ms=$(per $(($(server_jit) - jit0)))"
        echo "$tag$line"
        keep <<<"$line"
      else
        echo "$lib $recipe: failed (round $r): $(tail -3 "$build/$lib-$recipe.log")" >&2
        failed=1
      fi
    done
  done
done

/usr/bin/python3 bench/summarize.py "$results" || failed=1
exit $failed
