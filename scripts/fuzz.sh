#!/usr/bin/env bash
# Runs every fuzz target of the repository (all modules of go.work) for a
# bounded time each and fails if any of them finds a crash. Go runs one fuzz
# target per invocation, so each target gets its own `go test -fuzz`.
#
#   scripts/fuzz.sh                 # every target, FUZZTIME each (default 10s)
#   FUZZTIME=2m scripts/fuzz.sh     # longer
#   scripts/fuzz.sh FuzzValidate FuzzDecide   # only these targets
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
# the test files under the root, whatever their module (vendor and testdata excluded).
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

# corpus lists the files of a target's corpus directory (crashers land there).
corpus() { ls -1 "$1/testdata/fuzz/$2" 2>/dev/null || true; }

fuzz() { go test -run '^$' -fuzz "^${2}\$" -fuzztime "$fuzztime" "./$1"; }

failed=()
ran=0
for entry in "${targets[@]}"; do
  read -r dir target <<<"$entry"
  wanted "$target" || continue
  ran=$((ran + 1))
  echo "=== fuzz.sh: $target in ./$dir for $fuzztime"
  before=$(corpus "$dir" "$target")
  if fuzz "$dir" "$target"; then
    continue
  fi
  if [[ $(corpus "$dir" "$target") != "$before" ]]; then
    failed+=("./$dir $target (new crasher in $dir/testdata/fuzz/$target)")
    continue
  fi
  # No input was written: the fuzzing engine itself failed (a worker killed
  # or hung on a loaded machine), or a seed failed, which fails again.
  echo "=== fuzz.sh: $target failed without a new crasher; running it once more"
  if ! fuzz "$dir" "$target"; then
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
