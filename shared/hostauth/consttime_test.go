package hostauth_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// TestProofComparedInConstantTime is a static check: a proof's hash is
// compared with subtle.ConstantTimeCompare, never with == or != (whose time
// tells an attacker how many leading bytes matched) nor bytes.Equal or
// strings.Compare, which stop at the first difference too
// (reference-behaviour §3, "Verifying a proof", step 5). No test that runs
// the code can see the difference, so the test reads the source of
// CheckProof.
func TestProofComparedInConstantTime(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "proof.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var check *ast.FuncDecl
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == "CheckProof" {
			check = fd
		}
	}
	if check == nil {
		t.Fatal("proof.go declares no CheckProof")
	}
	constantTime := false
	ast.Inspect(check.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				if pkg, ok := sel.X.(*ast.Ident); ok {
					switch pkg.Name + "." + sel.Sel.Name {
					case "subtle.ConstantTimeCompare":
						constantTime = true
					case "bytes.Equal", "bytes.Compare", "strings.Compare", "strings.EqualFold", "reflect.DeepEqual":
						t.Errorf("CheckProof compares with %s.%s, which is not constant-time", pkg.Name, sel.Sel.Name)
					}
				}
			}
		case *ast.BinaryExpr:
			if n.Op != token.EQL && n.Op != token.NEQ {
				return true
			}
			// Only the result of the constant-time compare may be
			// compared, with an integer.
			if lit, ok := n.Y.(*ast.BasicLit); ok && lit.Kind == token.INT {
				return true
			}
			t.Errorf("CheckProof compares with %s at offset %d, which is not constant-time", n.Op, n.OpPos)
		}
		return true
	})
	if !constantTime {
		t.Error("CheckProof does not call subtle.ConstantTimeCompare")
	}
}
