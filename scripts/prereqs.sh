#!/usr/bin/env bash
# prereqs.sh installs or builds what this project's tests (or demos) need and
# is missing, and says for each thing whether it was present, installed or
# built. Run it as often as you like: a second run finds everything present.
#
# Usage: scripts/prereqs.sh [--demo [--postgres]] [--dry-run]
#
#   (default)  everything the whole test suite needs (scripts/test.sh runs
#              this first):
#                - Debian packages: zookeeper (the local backend, and the
#                  jars of the interop tests), libcurator-recipes-java
#                  (Curator), python3-kazoo (kazoo), debootstrap (to build
#                  the image), postgresql (the flash sale's test starts
#                  its own server with it), default-jdk-headless if javac
#                  is missing;
#                - the Docker image ZK_IMAGE (default
#                  zkrecipes/zookeeper:3.8-debian), built from Debian packages
#                  by scripts/zk-image.sh (several minutes) if it is ours,
#                  else pulled (unless ZK_PULL=never);
#                - the Go modules of every module of go.work (go mod
#                  download);
#                - the Go tools of scripts/tools.sh (staticcheck, apidiff),
#                  fetched through the Go module proxy into the module
#                  cache, from where scripts/test.sh and
#                  scripts/apidiff.sh run them.
#   --demo     only a ZooKeeper for the examples: nothing if ZK_SERVERS is
#              set, a local install (java and Debian's zookeeper or
#              ZOOKEEPER_HOME) or the image ZK_IMAGE is present; else the
#              zookeeper package (a standalone server starts in about a
#              second, where the image takes minutes to build).
#   --postgres with --demo: also a PostgreSQL server (Debian's postgresql
#              package) unless one is installed, for the flash sale's
#              -db postgres.
#   --dry-run  say what would be installed or built; change nothing.
#
# Installing needs root: it uses sudo when not run as root. It needs a
# Debian-like system (apt-get) for packages, and Docker for the image (under
# CI=true a Docker daemon that does not answer is an error; elsewhere the
# tests then run on the local backend and skip what needs Docker).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=all
dry=false
postgres=false
for arg in "$@"; do
  case $arg in
    --demo) mode=demo ;;
    --postgres) postgres=true ;;
    --dry-run) dry=true ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "prereqs.sh: unknown argument: $arg (see --help)" >&2; exit 2 ;;
  esac
done

image=${ZK_IMAGE:-zkrecipes/zookeeper:3.8-debian}
our_image=zkrecipes/zookeeper:3.8-debian
ci=false
case ${CI:-} in 1 | t | T | true | TRUE | True) ci=true ;; esac

say() { echo "prereqs: $*"; }
fail() { echo "prereqs: $*" >&2; exit 1; }

# as_root runs a command as root (sudo when needed), or only prints it
# with --dry-run.
as_root() {
  if [[ $dry == true ]]; then
    say "  would run: $*"
    return 0
  fi
  if [[ $(id -u) -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    fail "not root and no sudo: run as root: $*"
  fi
}

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

# install_packages installs the Debian packages given that are missing.
install_packages() {
  local p missing=()
  for p in "$@"; do
    if installed "$p"; then
      say "package $p: present"
    else
      missing+=("$p")
    fi
  done
  ((${#missing[@]} == 0)) && return 0
  if ! command -v apt-get >/dev/null 2>&1; then
    fail "missing ${missing[*]} and no apt-get on this system: install ZooKeeper, Curator and kazoo yourself, or set ZOOKEEPER_HOME"
  fi
  say "installing Debian packages: ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  [[ $dry == true ]] || say "installed: ${missing[*]}"
}

# docker_answers reports whether a Docker daemon answers.
docker_answers() { command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; }

# ensure_image builds (our image) or pulls (any other) the image if absent.
ensure_image() {
  if ! docker_answers; then
    if [[ $ci == true ]]; then
      fail "docker: the daemon does not answer (docker info failed); CI=true needs it"
    fi
    say "docker: not available; skipping the image (tests use the local backend and skip what needs Docker)"
    return 0
  fi
  say "docker: $(docker version --format '{{.Server.Version}}' 2>/dev/null) present"
  if docker image inspect "$image" >/dev/null 2>&1; then
    say "image $image: present"
    return 0
  fi
  if [[ $image == "$our_image" ]]; then
    say "image $image: building with scripts/zk-image.sh (debootstrap of Debian packages: several minutes)"
    as_root env ZK_IMAGE="$image" ${DEBIAN_MIRROR:+DEBIAN_MIRROR="$DEBIAN_MIRROR"} scripts/zk-image.sh
  elif [[ ${ZK_PULL:-} == never ]]; then
    fail "image $image: not present, and ZK_PULL=never: docker load it, or unset ZK_IMAGE to build $our_image"
  else
    say "image $image: pulling"
    if [[ $dry == true ]]; then say "  would run: docker pull $image"; else docker pull "$image"; fi
  fi
  [[ $dry == true ]] || say "image $image: ready"
}

# local_zookeeper reports whether the local backend can run: java and
# ZooKeeper's jars (ZOOKEEPER_HOME, or Debian's package).
local_zookeeper() {
  command -v java >/dev/null 2>&1 || [[ -x ${JAVA_HOME:-/nonexistent}/bin/java ]] || return 1
  if [[ -n ${ZOOKEEPER_HOME:-} ]]; then
    compgen -G "$ZOOKEEPER_HOME/lib/*.jar" >/dev/null || compgen -G "$ZOOKEEPER_HOME/*.jar" >/dev/null
  else
    [[ -f /usr/share/java/zookeeper.jar ]]
  fi
}

command -v go >/dev/null 2>&1 || fail "go: not found; install Go 1.26 or newer (1.22 for the library alone) (https://go.dev/doc/install)"
say "go: $(go env GOVERSION) present"

if [[ $mode == demo ]]; then
  if [[ -n ${ZK_SERVERS:-} ]]; then
    say "ZooKeeper: ZK_SERVERS=$ZK_SERVERS, nothing to install"
  elif local_zookeeper; then
    say "ZooKeeper: local install present (${ZOOKEEPER_HOME:-/usr/share/java/zookeeper.jar})"
  elif [[ -n ${ZK_IMAGE:-} ]] && docker_answers && docker image inspect "$ZK_IMAGE" >/dev/null 2>&1; then
    say "ZooKeeper: docker image $ZK_IMAGE present"
  else
    pkgs=(zookeeper)
    command -v java >/dev/null 2>&1 || pkgs+=(default-jre-headless)
    install_packages "${pkgs[@]}"
  fi
  if [[ $postgres == true ]]; then
    if compgen -G '/usr/lib/postgresql/*/bin/pg_ctl' >/dev/null || command -v pg_ctl >/dev/null 2>&1; then
      say "PostgreSQL: server programs present"
    else
      install_packages postgresql
    fi
  fi
  exit 0
fi

pkgs=(zookeeper libcurator-recipes-java python3-kazoo debootstrap postgresql)
if command -v javac >/dev/null 2>&1; then
  say "javac: present ($(javac -version 2>&1))"
else
  pkgs+=(default-jdk-headless)
fi
install_packages "${pkgs[@]}"
if command -v java >/dev/null 2>&1; then
  say "java: present ($(java -version 2>&1 | head -n 1))"
fi
ensure_image
# In workspace mode (go.work), go mod download covers every module of the
# workspace.
if GOPROXY=off go mod download >/dev/null 2>&1; then
  say "Go modules: present"
elif [[ $dry == true ]]; then
  say "Go modules: would run go mod download"
else
  say "Go modules: downloading"
  go mod download
  say "Go modules: downloaded"
fi
. scripts/tools.sh
for tool in "$staticcheck" "$apidiff"; do
  # Present when it runs from the module cache alone.
  if GOPROXY="file://$(go env GOMODCACHE)/cache/download" go run "$tool" -h >/dev/null 2>&1; then
    say "Go tool $tool: present"
  elif [[ $dry == true ]]; then
    say "Go tool $tool: would run go run $tool -h"
  else
    say "Go tool $tool: downloading"
    go run "$tool" -h >/dev/null
    say "Go tool $tool: downloaded"
  fi
done
