# Sourced by the benchmark scripts (bench-peers.sh, bench-traffic.sh,
# bench-scale.sh), from the repository's root, with $ensemble set to 0 (one
# standalone server) or 1 (a three-node ensemble). It
#  - installs what is missing from Debian's packages, and says so: zookeeper,
#    libcurator-recipes-java, python3-kazoo, default-jdk-headless (javac);
#  - builds into a temporary directory the peer benchmarks of bench/peers
#    (Curator's CuratorBench and CuratorScale: javac against /usr/share/java,
#    onto $classpath; go-zookeeper: go build; kazoo runs as it is),
#    bench/limit, bench/scale and examples/bench;
#  - starts ZooKeeper on random free ports (scripts/zk-standalone.sh or
#    scripts/zk-ensemble.sh), killed with the build directory when the
#    script exits.
# It sets build, classpath, servers and scenario and defines run_lib,
# run_limit, packets, server_cpu and server_jit.

# The Debian packages the peers need, and the jars Curator runs with (as
# internal/testzk's CompileCurator).
bench_pkgs="zookeeper libcurator-recipes-java python3-kazoo default-jdk-headless"
bench_jars="curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava slf4j-api slf4j-nop netty-all"

missing=()
for p in $bench_pkgs; do
  [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing Debian packages: ${missing[*]}" >&2
  sudo=(); ((EUID == 0)) || sudo=(sudo)
  apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q)
  "${apt[@]}" install -y "${missing[@]}" >&2 ||
    { "${apt[@]}" update >&2 && "${apt[@]}" install -y "${missing[@]}" >&2; }
fi

build=$(mktemp -d /tmp/zkrecipes-bench-XXXX)
zk_pids=""
trap 'kill -9 $zk_pids 2>/dev/null || true; rm -rf "$build"' EXIT

echo "building the benchmarks in $build" >&2
classpath=$(for j in $bench_jars; do printf '/usr/share/java/%s.jar:' "$j"; done)$build/curator
mkdir -p "$build/curator"
javac -nowarn -cp "$classpath" -d "$build/curator" bench/peers/curator/*.java >&2
go build -o "$build/gozk" ./bench/peers/gozk
go build -o "$build/limit" ./bench/limit
go build -o "$build/scale" ./bench/scale
go build -o "$build/zkbench" ./examples/bench

# free PORT COUNT: true when nothing answers on 127.0.0.1:PORT..PORT+COUNT-1.
free() {
  local p
  for ((p = $1; p < $1 + $2; p++)); do
    timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$p" 2>/dev/null && return 1
  done
  return 0
}
for _ in 1 2 3; do
  port=$((20000 + RANDOM % 20000))
  if ((ensemble)); then
    free "$port" 16 || continue
    zk_pids=$(scripts/zk-ensemble.sh "$port" </dev/null) || continue
    servers=127.0.0.1:$port,127.0.0.1:$((port + 1)),127.0.0.1:$((port + 2))
    scenario="3-node ensemble"
  else
    free "$port" 1 || continue
    zk_pids=$(scripts/zk-standalone.sh "$port" </dev/null) || continue
    servers=127.0.0.1:$port
    scenario="standalone server"
  fi
  break
done
[[ -n $zk_pids ]] || { echo "could not start ZooKeeper" >&2; exit 1; }

# run_lib LIBRARY RECIPE CLIENTS CYCLES [THREADS]: one run of one library
# (zkrecipes, curator, kazoo or gozk) on RECIPE (mutex, semmutex, write or
# read); its result line on stdout, its stderr in $build/LIBRARY-RECIPE.log.
# THREADS above 1 (mutex only; not kazoo) is the same-process scenario:
# THREADS threads or goroutines per client, sharing its session (Curator:
# one CuratorFramework and one InterProcessMutex; zk.Lock: one conn;
# zkrecipes: one session, with $ZKBENCH_FLAGS, e.g. "-local-handoff 100
# -probe"). Fails when the program fails or runs for more than 15 minutes.
run_lib() {
  local lib=$1 recipe=$2 n=$3 cycles=$4 threads=${5:-1} log=$build/$1-$2.log
  local more=()
  ((threads > 1)) && more=("$threads")
  case $lib in
    zkrecipes)
      local ours=$recipe
      [[ $recipe == semmutex ]] && ours=semaphoremutex
      local rc=0
      # shellcheck disable=SC2086 # ZKBENCH_FLAGS is a list of flags
      timeout 900 "$build/zkbench" -recipe "$ours" -clients "$n" -cycles "$cycles" -goroutines "$threads" ${ZKBENCH_FLAGS:-} \
        -servers "$servers" 2>"$log" | sed "s/^zkrecipes semaphoremutex /zkrecipes semmutex /" || rc=$?
      # The server's packets per handoff and the probe's longest wait, to stderr.
      grep -h '^probe\|^server packets' "$log" | sed "s/^/  zkrecipes $recipe: /" >&2 || true
      return $rc ;;
    curator) timeout 900 java -cp "$classpath" CuratorBench "$servers" "$recipe" "$n" "$cycles" "${more[@]}" 2>"$log" ;;
    kazoo) timeout 900 /usr/bin/python3 bench/peers/kazoo/kazoo_bench.py "$servers" "$recipe" "$n" "$cycles" 2>"$log" ;;
    gozk) timeout 900 "$build/gozk" "$servers" "$recipe" "$n" "$cycles" "${more[@]}" 2>"$log" ;;
    *) echo "unknown library $lib" >&2; return 2 ;;
  esac
}

# libs_for RECIPE [THREADS]: the libraries that have RECIPE (go-zookeeper
# only a mutex); with THREADS above 1, those that run the same-process
# scenario (Curator, zk.Lock, zkrecipes).
libs_for() {
  if ((${2:-1} > 1)); then echo "curator gozk zkrecipes"
  elif [[ $1 == mutex ]]; then echo "curator kazoo gozk zkrecipes"; else echo "curator kazoo zkrecipes"; fi
}

# run_limit OPS: the server's sequential rate, one client (bench/limit): two
# lines, limit setdata and limit createdelete.
run_limit() { timeout 900 "$build/limit" "$servers" "$1" 2>"$build/limit.log"; }

# server_cpu: the CPU time (user + system, in clock ticks) the servers'
# processes have used so far.
server_cpu() {
  local p t=0 f
  for p in $zk_pids; do
    read -r -a f <"/proc/$p/stat" || continue
    t=$((t + f[13] + f[14]))
  done
  echo "$t"
}
# server_jit: the part of server_cpu that the servers' JIT compiler threads
# (HotSpot's "C1 CompilerThread" and "C2 CompilerThread") used: compiling
# code paths the servers had not run often yet, not serving requests.
server_jit() {
  local p t=0 f task
  for p in $zk_pids; do
    for task in /proc/"$p"/task/*; do
      [[ $(cat "$task/comm" 2>/dev/null) == C[12]\ CompilerThre* ]] || continue
      read -r -a f <"$task/stat" 2>/dev/null || continue
      t=$((t + f[13] + f[14]))
    done
  done
  echo "$t"
}
# packets: the sum over the servers of mntr's zk_packets_sent and
# zk_packets_received.
packets() {
  local s sum=0 v
  for s in ${servers//,/ }; do
    v=$(timeout 5 bash -c "exec 3<>/dev/tcp/${s%:*}/${s#*:} && echo mntr >&3 && cat <&3" |
      awk '$1 == "zk_packets_sent" || $1 == "zk_packets_received" { n += $2 } END { print n + 0 }')
    sum=$((sum + v))
  done
  echo "$sum"
}
