module github.com/zkrecipes/zkrecipes/cmd/zkrecipes

go 1.22.0

replace github.com/zkrecipes/zkrecipes => ../..

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
