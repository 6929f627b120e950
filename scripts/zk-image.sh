#!/usr/bin/env bash
# zk-image.sh builds a ZooKeeper Docker image from Debian's own packages,
# without any registry: debootstrap a minimal bookworm root file system with
# openjdk-17-jre-headless and zookeeper, add an entrypoint that speaks the
# official `zookeeper` image's environment interface, and `docker import` it.
#
# Usage: scripts/zk-image.sh [--force]
#
#   --force   rebuild even if the image already exists
#
# Environment:
#   ZK_IMAGE          image name to build   (default zkrecipes/zookeeper:3.8-debian)
#   ZK_ROOTFS         where to build the rootfs (default: a new directory under
#                     ${TMPDIR:-/tmp}; removed afterwards, file systems mounted
#                     inside it by an interrupted debootstrap unmounted first)
#   DEBIAN_MIRROR     Debian mirror URL     (default: taken from this machine's apt sources)
#
# The image honours ZOO_MY_ID, ZOO_SERVERS ("server.1=zk1:2888:3888;2181 ..."),
# ZOO_TICK_TIME, ZOO_INIT_LIMIT, ZOO_SYNC_LIMIT, ZOO_4LW_COMMANDS_WHITELIST,
# ZOO_ADMINSERVER_ENABLED, ZOO_STANDALONE_ENABLED, ZOO_MAX_SESSION_TIMEOUT and
# ZOO_MAX_CLIENT_CNXNS, like the official image. The image name is printed on
# the last line of standard output.
set -euo pipefail

image=${ZK_IMAGE:-zkrecipes/zookeeper:3.8-debian}
rootfs=${ZK_ROOTFS:-}
force=false

for arg in "$@"; do
  case $arg in
    --force) force=true ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "zk-image.sh: unknown argument: $arg" >&2; exit 2 ;;
  esac
done

log() { echo "zk-image.sh: $*" >&2; }

if ! command -v docker >/dev/null 2>&1; then
  log "docker is not installed"; exit 1
fi
if [[ $force == false ]] && docker image inspect "$image" >/dev/null 2>&1; then
  log "image $image already exists (use --force to rebuild)"
  echo "$image"
  exit 0
fi

# mirror prints the first Debian mirror configured for apt on this machine.
mirror() {
  local m=""
  if [[ -r /etc/apt/sources.list.d/debian.sources ]]; then
    m=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources)
  fi
  if [[ -z $m && -r /etc/apt/sources.list ]]; then
    m=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' /etc/apt/sources.list)
  fi
  if [[ -z $m ]]; then
    m=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ { print $2; exit }')
  fi
  echo "$m"
}

mirror_url=${DEBIAN_MIRROR:-$(mirror)}
if [[ -z $mirror_url ]]; then
  log "no Debian mirror found in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list; set DEBIAN_MIRROR"
  exit 1
fi
if ! command -v debootstrap >/dev/null 2>&1; then
  log "debootstrap is not installed (apt-get install debootstrap)"; exit 1
fi
if [[ $(id -u) -ne 0 ]]; then
  log "debootstrap needs root"; exit 1
fi

# unmount_below unmounts every file system mounted at or below directory $1,
# deepest first. debootstrap mounts /proc (and sometimes /sys) inside the
# rootfs; when it is killed those mounts stay, and a plain `rm -rf` of the
# rootfs would then fail or, without --one-file-system, reach into them.
unmount_below() {
  local dir mounts m
  dir=$(realpath -m "$1")
  mounts=$(awk -v d="$dir" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r)
  for m in $mounts; do
    umount "$m" 2>/dev/null || umount -l "$m" || log "cannot unmount $m"
  done
}
cleanup() {
  if [[ -n $rootfs && -e $rootfs ]]; then
    unmount_below "$rootfs"
    rm -rf --one-file-system "$rootfs" || log "cannot remove all of $rootfs"
  fi
  rm -f "$rootfs.log"
}
if [[ -z $rootfs ]]; then
  rootfs=$(mktemp -d "${TMPDIR:-/tmp}/zkrecipes-zk-rootfs.XXXXXX")
  chmod 0755 "$rootfs" # it becomes the image's /; mktemp makes it 0700
else
  cleanup # a rootfs left by an earlier, interrupted build
fi
trap cleanup EXIT

start=$SECONDS
log "debootstrap bookworm from $mirror_url into $rootfs"
debootstrap --variant=minbase --include=openjdk-17-jre-headless,zookeeper \
  bookworm "$rootfs" "$mirror_url" >"$rootfs.log" 2>&1 || {
  log "debootstrap failed; last lines of $rootfs.log:"; tail -n 30 "$rootfs.log" >&2; exit 1
}
log "debootstrap done in $((SECONDS - start)) s"

# Slim: documentation, manuals, locales, apt caches and lists.
rm -rf "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
  "$rootfs"/usr/share/locale/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* \
  "$rootfs"/var/cache/debconf/*-old "$rootfs"/var/log/*.log

mkdir -p "$rootfs/conf" "$rootfs/data" "$rootfs/datalog"
cat >"$rootfs/docker-entrypoint.sh" <<'ENTRYPOINT'
#!/bin/sh
# Entrypoint of the zkrecipes ZooKeeper image (Debian packages). It follows the
# environment interface of the official `zookeeper` image.
set -eu
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

: "${ZOO_CONF_DIR:=/conf}"
: "${ZOO_DATA_DIR:=/data}"
: "${ZOO_DATA_LOG_DIR:=/datalog}"
: "${ZOO_TICK_TIME:=2000}"
: "${ZOO_INIT_LIMIT:=5}"
: "${ZOO_SYNC_LIMIT:=2}"
: "${ZOO_MAX_CLIENT_CNXNS:=60}"
: "${ZOO_STANDALONE_ENABLED:=true}"
: "${ZOO_ADMINSERVER_ENABLED:=true}"
: "${ZOO_4LW_COMMANDS_WHITELIST:=srvr}"
: "${ZOO_MY_ID:=1}"
: "${ZOO_SERVERS:=}"
: "${ZOO_MAX_SESSION_TIMEOUT:=}"
: "${JVMFLAGS:=-Xms32m -Xmx256m -XX:+UseSerialGC}"

cfg="$ZOO_CONF_DIR/zoo.cfg"
mkdir -p "$ZOO_CONF_DIR" "$ZOO_DATA_DIR" "$ZOO_DATA_LOG_DIR"

# Like the official image: write the configuration only on first start, so a
# restarted container keeps its identity.
if [ ! -f "$cfg" ]; then
  {
    echo "dataDir=$ZOO_DATA_DIR"
    echo "dataLogDir=$ZOO_DATA_LOG_DIR"
    echo "tickTime=$ZOO_TICK_TIME"
    echo "initLimit=$ZOO_INIT_LIMIT"
    echo "syncLimit=$ZOO_SYNC_LIMIT"
    echo "maxClientCnxns=$ZOO_MAX_CLIENT_CNXNS"
    echo "clientPort=2181"
    echo "standaloneEnabled=$ZOO_STANDALONE_ENABLED"
    echo "admin.enableServer=$ZOO_ADMINSERVER_ENABLED"
    echo "4lw.commands.whitelist=$ZOO_4LW_COMMANDS_WHITELIST"
    echo "quorumListenOnAllIPs=true"
    if [ -n "$ZOO_MAX_SESSION_TIMEOUT" ]; then
      echo "maxSessionTimeout=$ZOO_MAX_SESSION_TIMEOUT"
    fi
    for server in $ZOO_SERVERS; do
      echo "$server"
    done
  } >"$cfg"
fi
if [ ! -f "$ZOO_DATA_DIR/myid" ]; then
  echo "$ZOO_MY_ID" >"$ZOO_DATA_DIR/myid"
fi

if [ "$#" -gt 0 ]; then
  exec "$@"
fi

main=org.apache.zookeeper.server.quorum.QuorumPeerMain
if [ -z "$ZOO_SERVERS" ]; then
  main=org.apache.zookeeper.server.ZooKeeperServerMain
fi
# zookeeper.jar's manifest pulls in its dependencies; slf4j-simple (from
# libslf4j-java) sends the server's log to stderr, i.e. to `docker logs`.
cp=/usr/share/java/zookeeper.jar
if [ -f /usr/share/java/slf4j-simple.jar ]; then
  cp="$cp:/usr/share/java/slf4j-simple.jar"
fi
# shellcheck disable=SC2086 # JVMFLAGS is a list of flags.
exec java $JVMFLAGS -cp "$cp" "$main" "$cfg"
ENTRYPOINT
chmod 0755 "$rootfs/docker-entrypoint.sh"

old_id=$(docker image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
log "importing $image"
tar -C "$rootfs" -c . | docker import \
  -c 'ENTRYPOINT ["/docker-entrypoint.sh"]' \
  -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  -c 'WORKDIR /' \
  -c 'EXPOSE 2181 2888 3888' \
  -m "zkrecipes: ZooKeeper from Debian bookworm packages (scripts/zk-image.sh)" \
  - "$image" >/dev/null
new_id=$(docker image inspect --format '{{.Id}}' "$image")
if [[ -n $old_id && $old_id != "$new_id" ]]; then
  docker image rm "$old_id" >/dev/null 2>&1 || true # the replaced image, unless a container uses it
fi
log "built $image in $((SECONDS - start)) s"
echo "$image"
