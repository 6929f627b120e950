module github.com/zkrecipes/zkrecipes/examples

go 1.22.0

require (
	github.com/go-zookeeper/zk v1.0.4
	github.com/zkrecipes/zkrecipes v0.0.0-00010101000000-000000000000
	go.uber.org/goleak v1.3.0
	gonum.org/v1/plot v0.15.2
)

require (
	codeberg.org/go-fonts/liberation v0.4.1 // indirect
	codeberg.org/go-latex/latex v0.0.1 // indirect
	codeberg.org/go-pdf/fpdf v0.10.0 // indirect
	git.sr.ht/~sbinet/gg v0.6.0 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/campoy/embedmd v1.0.0 // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/petermattis/goid v0.0.0-20260820044319-269ab09b5261 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	go.uber.org/zap v1.27.0 // indirect
	golang.org/x/image v0.24.0 // indirect
	golang.org/x/text v0.22.0 // indirect
)

// The library is the repository's root module; go.work joins them for
// development, and this replace lets the module build on its own in a clone
// (GOWORK=off). Replacements of a dependency's go.mod are ignored by its
// users.
replace github.com/zkrecipes/zkrecipes => ../
