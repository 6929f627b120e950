#!/usr/bin/python3
"""A kazoo contender for the zkrecipes command's tests: it takes kazoo's
Lock at a path, with an identifier, and keeps it, or waits for it, until
its input ends. Prints "acquired" if it gets it. Its nodes keep kazoo's
own names ("<32hex>__lock__<seq>"); "-lock-" names count as contenders
(extra_lock_patterns), as zkrecipes' and Curator's nodes must.

Args: servers path identifier"""
import sys
import threading

from kazoo.client import KazooClient
from kazoo.recipe.lock import Lock

zk = KazooClient(hosts=sys.argv[1], timeout=8)
zk.start()
lock = Lock(zk, sys.argv[2], identifier=sys.argv[3], extra_lock_patterns=["-lock-"])


def take():
    try:
        lock.acquire()
        print("acquired", flush=True)
    except Exception:
        pass


threading.Thread(target=take, daemon=True).start()
sys.stdin.read()
zk.stop()
zk.close()
