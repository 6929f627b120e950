#!/usr/bin/env bash
# Starts a three-node ZooKeeper ensemble from Debian's jars (/usr/share/java)
# on 127.0.0.1, client ports PORT, PORT+1 and PORT+2 (quorum and election
# ports PORT+10..PORT+15), each node in a fresh data directory, for the
# benchmark scripts, and prints the three pids on one line once every node
# answers `srvr` as leader or follower. Stop it with kill -9 PIDS.
#
#   pids=$(scripts/zk-ensemble.sh PORT </dev/null)
#
# The same settings as scripts/zk-standalone.sh (tickTime 500 ms, no limit
# on sessions from one host, sessions up to 60 s) and every probe bounded.
# Each server logs to its directory's server.log, through SLF4J's simple
# binding (Debian's libslf4j-java, which the zookeeper package pulls in;
# without it SLF4J logs nothing), with the time of each line.
set -euo pipefail
port=${1:?usage: zk-ensemble.sh PORT}
dir=$(mktemp -d "/tmp/zk-ensemble-$port-XXXX")
cp=/usr/share/java/zookeeper.jar
log=()
if [[ -f /usr/share/java/slf4j-simple.jar ]]; then
  cp+=:/usr/share/java/slf4j-simple.jar
  log=(-Dorg.slf4j.simpleLogger.showDateTime=true "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss.SSS")
fi
pids=()
stop() { ((${#pids[@]})) && kill -9 "${pids[@]}" 2>/dev/null || true; }
trap 'stop; exit 1' INT TERM
for n in 1 2 3; do
  mkdir -p "$dir/q$n/data"
  echo "$n" >"$dir/q$n/data/myid"
  {
    cat <<CFG
tickTime=500
initLimit=10
syncLimit=5
dataDir=$dir/q$n/data
clientPort=$((port + n - 1))
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=*
maxSessionTimeout=60000
maxClientCnxns=0
CFG
    for m in 1 2 3; do
      echo "server.$m=127.0.0.1:$((port + 8 + 2 * m)):$((port + 9 + 2 * m))"
    done
  } >"$dir/q$n/zoo.cfg"
  java -Xms64m -Xmx512m "${log[@]}" -cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain \
    "$dir/q$n/zoo.cfg" >"$dir/q$n/server.log" 2>&1 </dev/null &
  pids+=($!)
done
for _ in $(seq 1 600); do
  ready=0
  for n in 1 2 3; do
    p=$((port + n - 1))
    if timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$p && echo srvr >&3 && grep -qE 'Mode: (leader|follower)' <&3" 2>/dev/null; then
      ready=$((ready + 1))
    fi
  done
  if ((ready == 3)); then
    echo "${pids[*]}"
    exit 0
  fi
  sleep 0.1
done
stop
echo "zookeeper ensemble did not start; see $dir/q*/server.log" >&2
exit 1
