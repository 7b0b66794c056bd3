package runner

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/nova-platform/nova"

// TestLayers keeps runner the one place where stages and adapters meet
// (docs/architecture.md): it reads the real import graph with `go list`, so
// a shortcut added anywhere fails here rather than in review.
func TestLayers(t *testing.T) {
	pkgs := listPackages(t)
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		for _, dep := range p.Deps {
			d, ok := strings.CutPrefix(dep, module+"/")
			if !ok {
				continue
			}
			switch {
			case strings.HasPrefix(rel, "stages/") && strings.HasPrefix(d, "stages/") && stageOf(rel) != stageOf(d):
				t.Errorf("%s depends on %s: a stage must not reach into another stage; move what they share into runner", rel, d)
			case (rel == "runner" || strings.HasPrefix(rel, "runner/")) && (strings.HasPrefix(d, "stages/") || d == "action"):
				t.Errorf("%s depends on %s: runner is below the stages and the entrypoint", rel, d)
			case rel == "registry" && strings.HasPrefix(d, "runner/"):
				t.Errorf("registry depends on the adapter %s: the catalogue must not know how it is deployed", d)
			}
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, "github.com/go-git/go-git/v5/plumbing/transport") && rel != "runner/evidence" && !strings.HasPrefix(rel, "runner/evidence/") {
				t.Errorf("%s imports %s: only the evidence adapter talks git transports", rel, imp)
			}
		}
	}
}

// stageOf is the stage a package under stages/ belongs to: stages/policy
// and stages/policy/rego are one stage.
func stageOf(rel string) string {
	parts := strings.SplitN(rel, "/", 3)
	return parts[0] + "/" + parts[1]
}

type listedPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func listPackages(t *testing.T) []listedPackage {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-json=ImportPath,Imports,Deps", module+"/...")
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages; the check would be empty", len(pkgs))
	}
	return pkgs
}
