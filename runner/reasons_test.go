package runner

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

var update = flag.Bool("update", false, "rewrite generated files (docs/reason-codes.md)")

const reasonDoc = "../docs/reason-codes.md"

func TestReasonCodesDocIsCurrent(t *testing.T) {
	want := ReasonCodesMarkdown()
	if *update {
		if err := os.WriteFile(reasonDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(reasonDoc)
	if err != nil {
		t.Fatalf("%v; regenerate with: make docs", err)
	}
	if string(got) != want {
		t.Errorf("%s is stale; regenerate with: make docs (go test ./runner -run TestReasonCodesDocIsCurrent -update)", reasonDoc)
	}
}

// TestEveryReasonIsDocumented reads the Reason constants from the source,
// so a code added without a table entry (and thus without documentation)
// fails here rather than surprising a user.
func TestEveryReasonIsDocumented(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "reasons.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	upperSnake := regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$`)
	seen := map[Reason]bool{}
	consts := 0
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || vs.Type == nil || types(vs.Type) != "Reason" {
			return true
		}
		for _, v := range vs.Values {
			lit, ok := v.(*ast.BasicLit)
			if !ok {
				continue
			}
			code, _ := strconv.Unquote(lit.Value)
			consts++
			if !upperSnake.MatchString(code) {
				t.Errorf("reason %q is not UPPER_SNAKE", code)
			}
			if _, ok := Lookup(Reason(code)); !ok {
				t.Errorf("reason %s has no entry in the reason table", code)
			}
		}
		return true
	})
	for _, info := range Reasons() {
		if seen[info.Code] {
			t.Errorf("reason %s appears twice in the table", info.Code)
		}
		seen[info.Code] = true
		if info.Meaning == "" || info.Area == "" || !slices.Contains([]Kind{KindVerdict, KindError, KindWarning}, info.Kind) {
			t.Errorf("reason %s is incompletely documented: %+v", info.Code, info)
		}
	}
	if consts != len(seen) {
		t.Errorf("%d Reason constants but %d table entries", consts, len(seen))
	}
}

func types(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
