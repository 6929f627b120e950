#!/usr/bin/python3
"""The benchmark of kazoo's lock recipes under the load of examples/bench,
for scripts/bench-peers.sh (Debian's python3-kazoo, run by /usr/bin/python3):

    /usr/bin/python3 kazoo_bench.py SERVERS RECIPE CLIENTS CYCLES

RECIPE: mutex (Lock), semmutex (Semaphore with max_leases=1), write / read
(WriteLock, ReadLock). CLIENTS sessions (one KazooClient each) each do CYCLES
acquire/release rounds on one lock path with an empty critical section, all
starting together once every session is connected. Stdout gets exactly one
line:

    kazoo RECIPE clients=N cycles=M secs=S handoffs_per_s=X p50_ms=A p99_ms=B violations=V

p50 and p99 are of the time acquire takes; violations counts rounds in which a
holder of an exclusive lock found another holder inside (it must be 0; read
locks are shared and not checked).
"""
import sys
import threading
import time

from kazoo.client import KazooClient

SESSION_TIMEOUT_S = 30.0  # as examples/bench's default

RECIPES = {
    "mutex": lambda c, path: c.Lock(path),
    "semmutex": lambda c, path: c.Semaphore(path, max_leases=1),
    "write": lambda c, path: c.WriteLock(path),
    "read": lambda c, path: c.ReadLock(path),
}


def usage(msg):
    print(msg, file=sys.stderr)
    sys.exit(2)


def main():
    if len(sys.argv) != 5 or sys.argv[2] not in RECIPES:
        usage("usage: kazoo_bench.py SERVERS mutex|semmutex|write|read CLIENTS CYCLES")
    servers, recipe = sys.argv[1], sys.argv[2]
    try:
        clients, cycles = int(sys.argv[3]), int(sys.argv[4])
    except ValueError:
        clients = cycles = 0
    if clients < 1 or cycles < 1:
        usage("kazoo_bench.py: CLIENTS and CYCLES must be integers, at least 1")
    path = "/bench-kazoo-%s-%d" % (recipe, time.time_ns())

    sessions = []
    for _ in range(clients):
        c = KazooClient(hosts=servers, timeout=SESSION_TIMEOUT_S)
        c.start(timeout=30)
        sessions.append(c)
    locks = [RECIPES[recipe](c, path) for c in sessions]
    exclusive = recipe != "read"

    state = {"inside": 0, "violations": 0}
    guard = threading.Lock()
    lat, failures = [], []
    start = threading.Event()

    def client(lock):
        mine = []
        try:
            start.wait()
            for _ in range(cycles):
                t0 = time.perf_counter()
                lock.acquire()
                mine.append(time.perf_counter() - t0)
                if exclusive:
                    with guard:
                        state["inside"] += 1
                        if state["inside"] > 1:
                            state["violations"] += 1
                    with guard:
                        state["inside"] -= 1
                lock.release()
        except Exception as e:  # reported after the run
            failures.append(e)
            return
        with guard:
            lat.extend(mine)

    threads = [threading.Thread(target=client, args=(l,)) for l in locks]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    start.set()
    for t in threads:
        t.join()
    secs = time.perf_counter() - t0
    for c in sessions:
        c.stop()
        c.close()
    if failures:
        sys.exit("kazoo_bench.py: %r" % failures[0])

    lat.sort()
    n = clients * cycles
    ms = lambda s: int(s * 1e6) / 1e3  # whole microseconds, as examples/bench
    print("kazoo %s clients=%d cycles=%d secs=%.3f handoffs_per_s=%.1f p50_ms=%.3f p99_ms=%.3f violations=%d"
          % (recipe, clients, cycles, secs, n / secs, ms(lat[n // 2]), ms(lat[n * 99 // 100]), state["violations"]))


if __name__ == "__main__":
    main()
