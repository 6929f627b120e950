#!/usr/bin/env bash
# Starts a standalone ZooKeeper from Debian's jars (/usr/share/java) on
# 127.0.0.1:PORT in a fresh data directory, for the benchmark scripts, and
# prints its pid once it answers `srvr`. Stop it with kill -9 PID.
#
#   pid=$(scripts/zk-standalone.sh PORT </dev/null)
#
# Unlike shared/peers/zk-standalone.sh it lifts the per-host connection
# limit (maxClientCnxns=0: 100 sessions from one host exceed the default
# 60) and bounds every probe, so that a server that accepts but does not
# answer cannot hang the caller's $(...).
set -euo pipefail
port=${1:?usage: zk-standalone.sh PORT}
dir=$(mktemp -d "/tmp/zk-$port-XXXX")
cat >"$dir/zoo.cfg" <<CFG
tickTime=500
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=*
maxSessionTimeout=60000
maxClientCnxns=0
CFG
mkdir -p "$dir/data"
java -Xms64m -Xmx512m -cp /usr/share/java/zookeeper.jar org.apache.zookeeper.server.ZooKeeperServerMain \
  "$dir/zoo.cfg" >"$dir/server.log" 2>&1 </dev/null &
pid=$!
for _ in $(seq 1 300); do
  if timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && echo srvr >&3 && grep -q Mode <&3" 2>/dev/null; then
    echo "$pid"
    exit 0
  fi
  sleep 0.1
done
kill -9 "$pid" 2>/dev/null || true
echo "zookeeper did not start; see $dir/server.log" >&2
exit 1
