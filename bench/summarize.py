#!/usr/bin/python3
"""Summarizes the result lines of scripts/bench-peers.sh:

    /usr/bin/python3 bench/summarize.py RESULTS

RESULTS has one line per run, the round number and then the program's line:
the two limit lines of bench/limit, and the handoff lines of examples/bench
and bench/peers. Prints two Markdown tables: the limit, and per recipe and
library the median handoffs/s across rounds with its min–max, the medians of
p50 and p99, the violations, the servers' CPU time per handoff and the part
of it their JIT compilers took (when the line has server_cpu_ms and
server_jit_ms, which bench-peers.sh appends for servers it started),
zkrecipes ÷ this library and this ÷ each limit, and zkrecipes ÷ this
library in p99, in server CPU per handoff and in server CPU without the
JIT's (lower is better for zkrecipes there; ratios taken round by round,
then their median and min–max). Exits 1 when a run found a violation.
"""
import re, statistics, sys
runs, limits = {}, {}  # (recipe, library) -> {round: fields}; kind -> {round: fields}
for line in open(sys.argv[1]):
    m = re.match(r"(\d+) limit (\w+) .*ops_per_s=([\d.]+) p50_ms=([\d.]+) p99_ms=([\d.]+)", line)
    if m:
        limits.setdefault(m[2], {})[int(m[1])] = tuple(float(x) for x in m.groups()[2:])
        continue
    m = re.match(r"(\d+) (\w+) (\w+) clients=(\d+)(?: threads=(\d+))? .*handoffs_per_s=([\d.]+) p50_ms=([\d.]+) p99_ms=([\d.]+) violations=(\d+)", line)
    if m:
        # The same-process scenario (threads=T: T threads or goroutines per
        # client) is a recipe row of its own.
        recipe = m[3] if not m[5] else "%s ×%s threads" % (m[3], m[5])
        cpu = re.search(r" server_cpu_ms=([\d.]+)", line)
        jit = re.search(r" server_jit_ms=([\d.]+)", line)
        cpu, jit = float(cpu[1]) if cpu else None, float(jit[1]) if jit else None
        runs.setdefault((recipe, m[2]), {})[int(m[1])] = tuple(float(x) for x in m.groups()[5:]) + (
            cpu, jit, cpu - jit if cpu is not None and jit is not None else None)

def spread(xs, fmt):
    xs = sorted(xs)
    if not xs:
        return "—"
    s = fmt % statistics.median(xs)
    return s if len(xs) == 1 else "%s (%s–%s)" % (s, fmt % xs[0], fmt % xs[-1])

def ratios(a, b, i=0):  # a / b per round in field i, over the rounds both have
    return [a[r][i] / b[r][i] for r in a if r in b and a[r][i] is not None and b[r][i]]

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
print("| recipe | library | handoffs/s | p50 ms | p99 ms | violations | zkrecipes ÷ this | ÷ limit: set-data/s | ÷ limit: create+delete pairs/s | server CPU ms/handoff | of it JIT | p99: zkrecipes ÷ this | server CPU: zkrecipes ÷ this | without JIT: zkrecipes ÷ this |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
violations = 0
for recipe in dict.fromkeys(k[0] for k in runs):
    ours = runs.get((recipe, "zkrecipes"), {})
    for (rc, lib), rs in runs.items():
        if rc != recipe:
            continue
        v = list(rs.values())
        viol = int(sum(x[3] for x in v))
        violations += viol
        vs, p99, cpu, nojit = (spread(ratios(ours, rs, i), "%.2f×") for i in (0, 2, 4, 6))
        if lib == "zkrecipes":
            vs = p99 = cpu = nojit = "—"
        print("| %s | %s | %s | %.2f | %.2f | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            recipe, lib, spread([x[0] for x in v], "%.0f"), statistics.median(x[1] for x in v),
            statistics.median(x[2] for x in v), viol, vs, spread(ratios(rs, writes), "%.2f"),
            spread(ratios(rs, pairs), "%.2f"), spread([x[4] for x in v if x[4] is not None], "%.2f"),
            spread([x[5] for x in v if x[5] is not None], "%.2f"), p99, cpu, nojit))
sys.exit(1 if violations else 0)
