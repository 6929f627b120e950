package conn_test

import (
	"bytes"
	"go/ast"
	"go/doc"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"reflect"
	"strings"
	"testing"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
)

// TestLinkAddsNoAPI: the links that let the module's recipes reach
// Session, Epoch and Lease (internal/connlink) add nothing a user of conn
// can see or reach. Each type embeds exactly one connlink.Link, as an
// unexported field; a Link has no exported field or method to promote;
// and conn's documentation (what go doc shows: exported declarations,
// methods and fields) names neither connlink nor the links.
func TestLinkAddsNoAPI(t *testing.T) {
	linkPkg := reflect.TypeOf(connlink.Link[int]{}).PkgPath()
	for _, typ := range []reflect.Type{
		reflect.TypeOf(conn.Session{}), reflect.TypeOf(conn.Epoch{}), reflect.TypeOf(conn.Lease{}),
	} {
		links := 0
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Type.PkgPath() != linkPkg {
				continue
			}
			links++
			if !f.Anonymous || f.IsExported() {
				t.Errorf("%s.%s: the link is not an unexported embedded field", typ.Name(), f.Name)
			}
		}
		if links != 1 {
			t.Errorf("%s embeds %d links, want 1", typ.Name(), links)
		}
	}
	link := reflect.TypeOf(connlink.Link[int]{})
	if n := reflect.PointerTo(link).NumMethod(); n != 0 {
		t.Errorf("connlink.Link has %d exported methods, want 0: they would be promoted to conn's types", n)
	}
	for i := range link.NumField() {
		if link.Field(i).IsExported() {
			t.Errorf("connlink.Link has the exported field %s", link.Field(i).Name)
		}
	}

	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, f := range pkgs["conn"].Files {
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/zkrecipes/zkrecipes/conn")
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	text.WriteString(p.Doc)
	write := func(decl ast.Node, docText string) {
		if err := format.Node(&text, fset, decl); err != nil {
			t.Fatal(err)
		}
		text.WriteString("\n" + docText + "\n")
	}
	for _, v := range append(p.Consts, p.Vars...) {
		write(v.Decl, v.Doc)
	}
	for _, f := range p.Funcs {
		write(f.Decl, f.Doc)
	}
	seen := map[string]bool{}
	for _, typ := range p.Types {
		seen[typ.Name] = true
		write(typ.Decl, typ.Doc)
		for _, v := range append(typ.Consts, typ.Vars...) {
			write(v.Decl, v.Doc)
		}
		for _, f := range append(typ.Funcs, typ.Methods...) {
			write(f.Decl, f.Doc)
		}
	}
	for _, name := range []string{"Session", "Epoch", "Lease"} {
		if !seen[name] {
			t.Errorf("conn's documentation has no type %s", name)
		}
	}
	for _, word := range []string{"connlink", "sessionLink", "epochLink", "leaseLink", "SessionLink", "EpochLink", "LeaseLink"} {
		if strings.Contains(text.String(), word) {
			t.Errorf("conn's documentation names %s", word)
		}
	}
}
