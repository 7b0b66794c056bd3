// Package pgtest runs a throwaway PostgreSQL for tests, the way
// runner/gitea/giteatest runs a Gitea: Start initdb's a cluster through
// .ci/postgres.sh (loopback only, a free port, a non-root owner, a random
// password) and stops and removes it when the test ends.
//
// A test that calls Start fails, never skips, when the PostgreSQL server
// binaries are missing: `make tools` (.ci/tools.sh postgres) installs them.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startTimeout bounds initdb, start and createdb: seconds when idle, more
// while `go test ./...` keeps both cores busy.
const startTimeout = 3 * time.Minute

// Server is a running cluster with one database, nova, owned by the
// password-authenticated user nova.
type Server struct {
	// URL is the connection URL, password included: pass it to terraform
	// as the pg backend's conn_str, never to a log.
	URL string
	// Dir holds the cluster (data/) and its postgres.log.
	Dir string
}

// Start runs a new cluster and stops it when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	script, err := findScript()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	// Not t.TempDir: its parents are private to this user, and the cluster
	// runs as another one when the tests run as root.
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	s := &Server{Dir: dir}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, script, "stop", dir).CombinedOutput(); err != nil {
			t.Errorf("pgtest: stopping the cluster: %v\n%s", err, out)
		}
		os.RemoveAll(dir)
	})
	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, script, "start", dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("pgtest: %s start: %v\n%s\n(install the server with `.ci/tools.sh postgres`, or set NOVA_PG_BIN)", script, err, stderr.String())
	}
	s.URL = strings.TrimSpace(stdout.String())
	if !strings.HasPrefix(s.URL, "postgres://") {
		t.Fatalf("pgtest: %s start printed no connection URL\n%s", script, stderr.String())
	}
	return s
}

// findScript finds .ci/postgres.sh above the package under test.
func findScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, ".ci", "postgres.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no .ci/postgres.sh above the package directory")
		}
		dir = parent
	}
}
