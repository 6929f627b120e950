#!/usr/bin/python3
"""Interop contender: kazoo's Lock on a lock path shared with zkrecipes' mutex
and Curator's InterProcessMutex. Run by recipes_test/interop_test.go.

Two settings make the three agree on the queue order. kazoo is told to
recognise "-lock-" names as contenders (extra_lock_patterns). And its own
nodes are named "_c_<32hex>-lock-<seq>" (go-zookeeper's protected names,
which zkrecipes recognises) instead of "<32hex>__lock__<seq>": Curator sorts
children by what follows the last "lock-" and would sort a "__lock__" name
by its random prefix, so it could think itself first while a kazoo node with
a lower sequence number still holds the lock.

Args: servers lock_path guard_path rounds hold_millis
Prints "hold <start_unix_ns> <end_unix_ns>" per round, "violation" when the
guard node already existed."""
import sys
import time
import uuid

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError
from kazoo.recipe.lock import Lock


class CuratorOrderedLock(Lock):
    def __init__(self, client, path, **kw):
        super().__init__(client, path, **kw)
        self.prefix = "_c_" + uuid.uuid4().hex + "-lock-"
        self.create_path = self.path + "/" + self.prefix


servers, lock_path, guard = sys.argv[1], sys.argv[2], sys.argv[3]
rounds, hold = int(sys.argv[4]), int(sys.argv[5]) / 1000.0
zk = KazooClient(hosts=servers, timeout=30)
zk.start()
lock = CuratorOrderedLock(zk, lock_path, extra_lock_patterns=["-lock-"])
for _ in range(rounds):
    lock.acquire()
    start = time.time_ns()
    try:
        zk.create(guard, ephemeral=True)
    except NodeExistsError:
        print("violation", flush=True)
    time.sleep(hold)
    zk.delete(guard)
    end = time.time_ns()
    lock.release()
    print("hold %d %d" % (start, end), flush=True)
zk.stop()
zk.close()
