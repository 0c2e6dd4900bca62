package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// review-admin, noticed and left: the webhook secret was compared with
// subtle.ConstantTimeCompare on the raw bytes, which returns at once when
// the lengths differ, so an answer's time could tell a sender the secret's
// length (the admin token was hashed first). Every secret is now compared
// through equalSecret, over SHA-256 digests of equal length; this test
// fails when a comparison of raw secrets creeps back in.
func TestSecretsAreComparedOnlyAsDigestsOfEqualLength(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var raw []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		f, err := parser.ParseFile(fset, name, src, 0)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Name.Name == "equalSecret" {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "ConstantTimeCompare" {
					raw = append(raw, fset.Position(call.Pos()).String()+" in "+fn.Name.Name)
				}
				return true
			})
		}
	}
	require.Empty(t, raw, "compare secrets with equalSecret, never ConstantTimeCompare on raw bytes")

	require.True(t, equalSecret("a-webhook-secret-0123", "a-webhook-secret-0123"))
	require.False(t, equalSecret("a-webhook-secret-0123", "a-webhook-secret-01234"), "a longer guess")
	require.False(t, equalSecret("a-webhook-secret-012", "a-webhook-secret-0123"), "a prefix")
	require.False(t, equalSecret("", "a-webhook-secret-0123"))
}
