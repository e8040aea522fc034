//go:build ignore

// apilist prints the module's exported API, one identifier a line, as
// "package kind name" (kinds: func, method, type, field, const, var), so
// two trees' listings compare with diff:
//
//	go run tools/apilist.go > /tmp/api.txt
//
// It reads the non-test files of every package under the current
// directory (skipping testdata, internal packages and nested modules).
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	var lines []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if path != "." && (name == "testdata" || name == "internal" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != "." {
			return filepath.SkipDir
		}
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, path, func(fi fs.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, 0)
		if err != nil {
			return err
		}
		for pname, p := range pkgs {
			if pname == "main" {
				continue
			}
			for _, f := range p.Files {
				if ignored(f) {
					continue
				}
				lines = append(lines, decls(filepath.ToSlash(path), f)...)
			}
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
}

// ignored: a file under //go:build ignore.
func ignored(f *ast.File) bool {
	for _, cg := range f.Comments {
		if cg.Pos() > f.Package {
			break
		}
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, "//go:build") && strings.Contains(c.Text, "ignore") {
				return true
			}
		}
	}
	return false
}

func decls(pkg string, f *ast.File) []string {
	var out []string
	add := func(kind, name string) { out = append(out, pkg+" "+kind+" "+name) }
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				add("func", d.Name.Name)
				continue
			}
			if r := recvName(d.Recv.List[0].Type); ast.IsExported(r) {
				add("method", r+"."+d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					add("type", s.Name.Name)
					switch t := s.Type.(type) {
					case *ast.StructType:
						for _, fl := range t.Fields.List {
							for _, n := range fl.Names {
								if n.IsExported() {
									add("field", s.Name.Name+"."+n.Name)
								}
							}
							if len(fl.Names) == 0 {
								if n := recvName(fl.Type); ast.IsExported(n) {
									add("field", s.Name.Name+"."+n+" (embedded)")
								}
							}
						}
					case *ast.InterfaceType:
						for _, m := range t.Methods.List {
							for _, n := range m.Names {
								if n.IsExported() {
									add("method", s.Name.Name+"."+n.Name)
								}
							}
						}
					}
				case *ast.ValueSpec:
					kind := "var"
					if d.Tok == token.CONST {
						kind = "const"
					}
					for _, n := range s.Names {
						if n.IsExported() {
							add(kind, n.Name)
						}
					}
				}
			}
		}
	}
	return out
}

// recvName: the type name of a receiver or embedded field (T, *T, T[P], pkg.T).
func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.SelectorExpr:
		return t.Sel.Name
	case *ast.Ident:
		return t.Name
	}
	return ""
}
