package templates

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite generated workflows in workflows-src")

// lint runs actionlint over one workflow file and returns its findings.
func lint(t *testing.T, name string, data []byte) []string {
	t.Helper()
	l, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.Lint(name, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// novaInputs are the inputs action.yml declares.
func novaInputs(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Inputs map[string]any `yaml:"inputs"`
	}
	if err := yaml.Unmarshal(data, &meta); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for k := range meta.Inputs {
		out[k] = true
	}
	return out
}

// lintNovaSteps checks what actionlint cannot without fetching the action:
// every step that uses Nova's action passes only inputs action.yml has.
func lintNovaSteps(t *testing.T, data []byte, inputs map[string]bool) []string {
	t.Helper()
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Uses string         `yaml:"uses"`
				With map[string]any `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		return []string{err.Error()}
	}
	var out []string
	for name, j := range wf.Jobs {
		for _, s := range j.Steps {
			if !strings.HasPrefix(s.Uses, "nova-platform/nova@") && s.Uses != "./" {
				continue
			}
			for k := range s.With {
				if !inputs[k] {
					out = append(out, fmt.Sprintf("job %s: input %q is not in action.yml", name, k))
				}
			}
		}
	}
	return out
}
