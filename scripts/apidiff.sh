#!/usr/bin/env bash
# Prints the API compatibility report of the library module
# (github.com/zkrecipes/zkrecipes: every public package, zktest included;
# internal packages and the examples and recipes_test modules are not API)
# between a base and the working tree, with golang.org/x/exp/cmd/apidiff
# (the version of scripts/tools.sh, through go run), so that an API change
# is seen before it lands.
#
#   scripts/apidiff.sh            # base: the last release tag (v*), else the root commit
#   scripts/apidiff.sh REF        # base: REF (a tag, branch or commit)
#   scripts/apidiff.sh -incompatible [REF]   # only the incompatible changes
#
# It says which base it took and why. The report lists incompatible changes
# first, then compatible ones (additions); an empty report means the
# exported API did not change. Exits 0 after printing (1 if it could not
# build the report), whatever the report says.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/tools.sh

flags=()
ref=
for arg in "$@"; do
  case $arg in
    -incompatible) flags+=(-incompatible) ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "apidiff.sh: unknown flag $arg (see --help)" >&2; exit 2 ;;
    *) ref=$arg ;;
  esac
done

module=github.com/zkrecipes/zkrecipes
if [[ -n $ref ]]; then
  why="given"
elif ref=$(git describe --tags --abbrev=0 --match 'v[0-9]*' HEAD 2>/dev/null); then
  why="the last release tag"
else
  ref=$(git rev-list --max-parents=0 HEAD | tail -n 1)
  why="no release tag (v*) yet: the root commit"
fi
commit=$(git rev-parse --verify --quiet "$ref^{commit}") || { echo "apidiff.sh: no such ref: $ref" >&2; exit 1; }
echo "apidiff: $module, base $ref ($why, $(git log -1 --format='%h %cs' "$commit")) -> working tree ($(git log -1 --format='%h' HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo ', with changes'))"

tmp=$(mktemp -d /tmp/zkrecipes-apidiff-XXXX)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir "$tmp/base"
git archive "$commit" | tar -x -C "$tmp/base"

# export_api FROM OUT: apidiff's export data of the module in directory FROM
# into OUT, the module on its own (GOWORK=off; -mod=mod: the base's go.sum
# may lack entries); what apidiff says goes to OUT.err.
export_api() {
  (cd "$1" && GOWORK=off GOFLAGS=-mod=mod go_tool "$apidiff" -m -w "$2" "$module") 2>"$2.err"
}
if [[ ! -f $tmp/base/go.mod ]] ||
  { ! export_api "$tmp/base" "$tmp/base.api" && grep -q 'found no packages' "$tmp/base.api.err"; }; then
  echo "apidiff: the base has no package of $module: everything exported is new"
  exit 0
fi
for side in base head; do
  [[ $side == base ]] && dir=$tmp/base || dir=$PWD
  if [[ ! -s $tmp/$side.api ]] && ! export_api "$dir" "$tmp/$side.api"; then
    echo "apidiff.sh: export data of the $side:" >&2
    cat "$tmp/$side.api.err" >&2
    exit 1
  fi
done
# (apidiff names each internal package it skips: not API, not shown.)
go_tool "$apidiff" -m "${flags[@]}" "$tmp/base.api" "$tmp/head.api" 2> >(grep -v "^Ignoring internal package" >&2)
