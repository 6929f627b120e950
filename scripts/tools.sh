# Sourced by scripts/test.sh, scripts/apidiff.sh and scripts/prereqs.sh:
# what the checks run, in one place.
#
# The Go tools, at fixed versions, run with `go run TOOL@VERSION` (built
# once, then taken from the build and module caches; prereqs.sh fetches
# them through the Go module proxy):
staticcheck=honnef.co/go/tools/cmd/staticcheck@v0.8.2
apidiff=golang.org/x/exp/cmd/apidiff@v0.0.0-20261113113407-e3970619a1a4

# Every package of every module of the workspace (go.work). In workspace
# mode `./...` run at the root matches only the root module's packages; the
# module path pattern matches them all.
all_packages=github.com/zkrecipes/zkrecipes/...

# go_tool TOOL ARGS...: go run TOOL ARGS, taking TOOL and its modules from
# the module cache when it holds them (no network), else through GOPROXY.
go_tool() {
  local tool=$1
  shift
  GOPROXY="file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)" go run "$tool" "$@"
}
