#!/usr/bin/env bash
# Runs every fuzz target of the module for a bounded time each and fails if
# any of them finds a crash. Go runs one fuzz target per invocation, so each
# target gets its own `go test -fuzz`.
#
#   scripts/fuzz.sh                 # every target, FUZZTIME each (default 10s)
#   FUZZTIME=2m scripts/fuzz.sh     # longer
#   scripts/fuzz.sh FuzzValidatePath FuzzDecide   # only these targets
#
# A crash is written by `go test` to <package>/testdata/fuzz/<target>/<id>;
# commit it as a regression seed once fixed. The seed corpora
# (testdata/fuzz) also run as ordinary tests under `go test`.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=${FUZZTIME:-10s}
only=("$@")

wanted() {
  ((${#only[@]} == 0)) && return 0
  local t
  for t in "${only[@]}"; do [[ $t == "$1" ]] && return 0; done
  return 1
}

# "dir target" pairs, from the func Fuzz...(f *testing.F) declarations of
# the module's test files (vendor and testdata excluded).
mapfile -t targets < <(
  grep -rE --include='*_test.go' --exclude-dir=vendor --exclude-dir=testdata \
    '^func Fuzz[A-Za-z0-9_]*\(\w+ \*testing\.F\)' . |
    sed -E 's#^\./(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*#\1 \2#' |
    sort -u
)
if ((${#targets[@]} == 0)); then
  echo "fuzz.sh: no fuzz targets found" >&2
  exit 1
fi

failed=()
ran=0
for entry in "${targets[@]}"; do
  read -r dir target <<<"$entry"
  wanted "$target" || continue
  ran=$((ran + 1))
  echo "=== fuzz.sh: $target in ./$dir for $fuzztime"
  if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "./$dir"; then
    failed+=("./$dir $target")
  fi
done

if ((ran == 0)); then
  echo "fuzz.sh: none of the targets ${only[*]} exists" >&2
  exit 1
fi
if ((${#failed[@]} > 0)); then
  echo "=== fuzz.sh: FAILED (crashers are under <package>/testdata/fuzz/<target>/):" >&2
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "=== fuzz.sh: $ran target(s) passed"
