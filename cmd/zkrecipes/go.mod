module github.com/zkrecipes/zkrecipes/cmd/zkrecipes

go 1.22.0

require (
	github.com/creack/pty v1.1.18
	github.com/go-zookeeper/zk v1.0.4
	github.com/zkrecipes/zkrecipes v0.0.0-00010101000000-000000000000
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/stretchr/testify v1.10.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	go.uber.org/zap v1.27.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

// No replace directive: go install github.com/zkrecipes/zkrecipes/cmd/zkrecipes@latest
// refuses a module whose go.mod has one (TestGoInstallLatest). In the clone,
// go.work joins this module to the library. Built alone (GOWORK=off) it
// needs the library at the version required above from the module proxy:
// a release of the command requires a released library version here.
