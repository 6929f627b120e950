module github.com/zkrecipes/zkrecipes/metrics/otel

go 1.26.0

require (
	github.com/zkrecipes/zkrecipes v0.0.0-00010101000000-000000000000
	go.opentelemetry.io/otel v1.47.0
	go.opentelemetry.io/otel/metric v1.47.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-zookeeper/zk v1.0.4 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	go.uber.org/zap v1.27.0 // indirect
)

// The library is the repository's root module; go.work joins them for
// development, and this replace lets the module build on its own in a clone
// (GOWORK=off). Replacements of a dependency's go.mod are ignored by its
// users.
replace github.com/zkrecipes/zkrecipes => ../..
