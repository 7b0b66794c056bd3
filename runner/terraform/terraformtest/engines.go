// Package terraformtest finds the engines' binaries for tests that run
// them for real, so that a test whose outcome could differ by engine runs
// on each: the tools cache (.ci/tools.sh terraform opentofu, part of
// `make tools`) puts both on PATH. A missing binary fails the test, never
// skips it.
package terraformtest

import (
	"os/exec"
	"testing"

	"github.com/nova-platform/nova/runner"
)

// Engines lists the engines every real-engine test runs on.
var Engines = runner.Engines

// Program is the binary an engine runs as.
func Program(engine string) string {
	if engine == runner.EngineOpenTofu {
		return "tofu"
	}
	return "terraform"
}

// Binary is the path of engine's binary on PATH; it fails t when there is
// none.
func Binary(t testing.TB, engine string) string {
	t.Helper()
	p, err := exec.LookPath(Program(engine))
	if err != nil {
		tool := engine
		t.Fatalf("%s is not on PATH: run `make tools` (.ci/tools.sh %s) and put its bin directory on PATH", Program(engine), tool)
	}
	return p
}
