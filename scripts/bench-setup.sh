# Sourced by the benchmark scripts (bench-peers.sh, bench-traffic.sh), from
# the repository's root: finds and builds the peer benchmarks
# (../shared/peers, or PEERS_DIR), starts a standalone ZooKeeper on a random
# port (killed when the script exits) and builds examples/bench. Sets peers,
# servers and bin.
peers=${PEERS_DIR:-$(cd .. && pwd)/shared/peers}
[[ -x $peers/run.sh ]] || { echo "peer benchmarks not found in $peers (set PEERS_DIR)" >&2; exit 1; }
bash "$peers/setup.sh" >&2
port=$((20000 + RANDOM % 20000))
pid=$(scripts/zk-standalone.sh "$port" </dev/null)
trap 'kill -9 $pid 2>/dev/null || true' EXIT
servers=127.0.0.1:$port
bin=$(mktemp -d)/zkbench
go build -o "$bin" ./examples/bench
