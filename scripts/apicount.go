//go:build ignore

// apicount prints the exported API surface of the library packages: per
// package, the exported funcs, types and methods (methods of exported types,
// interface methods included), and the exported vars and consts (errors among
// them), with totals. Test files are not counted.
//
//	go run scripts/apicount.go          # from the repository root
//	go run scripts/apicount.go -v       # also list every identifier
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

var pkgs = []string{"conn", "metrics", "lock", "mutex", "semaphoremutex", "rwlock", "multilock", "exclusive", "leader", "zktest"}

func main() {
	verbose := flag.Bool("v", false, "list every identifier")
	flag.Parse()
	var tf, tt, tm, tv, tc, te int
	fmt.Printf("%-15s %5s %5s %7s %5s %6s %6s %6s\n", "package", "funcs", "types", "methods", "sum", "vars", "consts", "errors")
	for _, p := range pkgs {
		names, f, t, m, v, c, e := count(p)
		fmt.Printf("%-15s %5d %5d %7d %5d %6d %6d %6d\n", p, f, t, m, f+t+m, v, c, e)
		if *verbose {
			for _, n := range names {
				fmt.Printf("\t%s\n", n)
			}
		}
		tf, tt, tm, tv, tc, te = tf+f, tt+t, tm+m, tv+v, tc+c, te+e
	}
	fmt.Printf("%-15s %5d %5d %7d %5d %6d %6d %6d\n", "total", tf, tt, tm, tf+tt+tm, tv, tc, te)
}

func count(dir string) (names []string, funcs, types, methods, vars, consts, errs int) {
	fset := token.NewFileSet()
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	exportedType := map[string]bool{}
	var decls []ast.Decl
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		decls = append(decls, f.Decls...)
	}
	for _, d := range decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				if ts.Name.IsExported() {
					exportedType[ts.Name.Name] = true
				}
			}
		}
	}
	for _, d := range decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				funcs++
				names = append(names, "func "+d.Name.Name)
				continue
			}
			recv := recvName(d.Recv.List[0].Type)
			if exportedType[recv] {
				methods++
				names = append(names, "method "+recv+"."+d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					types++
					names = append(names, "type "+s.Name.Name)
					if it, ok := s.Type.(*ast.InterfaceType); ok {
						for _, m := range it.Methods.List {
							for _, n := range m.Names {
								if n.IsExported() {
									methods++
									names = append(names, "method "+s.Name.Name+"."+n.Name)
								}
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if !n.IsExported() {
							continue
						}
						switch {
						case d.Tok == token.VAR && strings.HasPrefix(n.Name, "Err"):
							errs++
							names = append(names, "error "+n.Name)
						case d.Tok == token.VAR:
							vars++
							names = append(names, "var "+n.Name)
						default:
							consts++
							names = append(names, "const "+n.Name)
						}
					}
				}
			}
		}
	}
	sort.Strings(names)
	return
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return ""
}
