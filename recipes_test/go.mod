module github.com/zkrecipes/zkrecipes/recipes_test

go 1.22.0

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/go-zookeeper/zk v1.0.4
	github.com/google/uuid v1.6.0
	github.com/stretchr/testify v1.10.0
	github.com/zkrecipes/zkrecipes v0.0.0-00010101000000-000000000000
	go.uber.org/goleak v1.3.0
	go.uber.org/zap v1.27.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/petermattis/goid v0.0.0-20260820044319-269ab09b5261 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

// The library is the repository's root module; go.work joins them for
// development, and this replace lets the module build on its own in a clone
// (GOWORK=off). Replacements of a dependency's go.mod are ignored by its
// users.
replace github.com/zkrecipes/zkrecipes => ../
