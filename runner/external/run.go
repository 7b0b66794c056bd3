// Package external runs the policy tools Nova does not embed (checkov,
// kyverno-json, infracost) as subprocesses: it finds their binaries, runs
// them with bounded output under the run's context, and keeps the tail of
// what they wrote to stderr for the error record when they fail.
package external

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// maxStdout bounds what a tool may print: enough for the JSON report of a
// very large plan, not enough to exhaust memory.
const maxStdout = 256 << 20

// Find resolves bin, a name looked up on PATH or a path, to an executable;
// "" when there is none, which engines report as "not configured".
func Find(bin string) string {
	if bin == "" {
		return ""
	}
	p, err := exec.LookPath(bin)
	if err != nil {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// Output is what a finished tool wrote and how it exited.
type Output struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int
}

// Command is one tool invocation.
type Command struct {
	// Tool names the tool (Checkov, KyvernoJSON, Infracost) for its
	// environment allowlist, whatever its binary is called.
	Tool string
	Path string
	Args []string
	// Env is what the tool may see part of: Run passes on only what
	// Environ allows for Tool.
	Env []string
	Dir string
}

// Run runs c to completion. Any exit status is returned in Output, since
// each tool has its own normal non-zero codes (checkov exits 1 when a
// check fails); an error means the tool could not run or was cancelled.
func Run(ctx context.Context, c Command) (Output, error) {
	cmd := exec.CommandContext(ctx, c.Path, c.Args...)
	// Filtered here, where every tool is started, so that no caller can
	// hand a tool nova's secrets by passing it the whole environment.
	// Never nil: a nil Env would give the tool all of nova's.
	cmd.Env, cmd.Dir = Environ(c.Tool, c.Env), c.Dir
	// A tool that ignores cancellation is killed after this grace period,
	// so a cancelled run never hangs on it.
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr capped
	stdout.limit, stderr.limit = maxStdout, 64<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := Output{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: cmd.ProcessState.ExitCode()}
	if ctx.Err() != nil {
		return out, fmt.Errorf("running %s: %w", filepath.Base(c.Path), ctx.Err())
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return out, fmt.Errorf("running %s: %w", filepath.Base(c.Path), err)
	}
	if stdout.truncated {
		return out, fmt.Errorf("running %s: output larger than %d bytes", filepath.Base(c.Path), maxStdout)
	}
	return out, nil
}

// Tail returns the last lines of a tool's stderr, at most n bytes, for an
// error record: tracebacks end with the line that explains them.
func Tail(stderr []byte, n int) string {
	s := strings.TrimSpace(string(stderr))
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	if s == "" {
		return "(no output on stderr)"
	}
	return s
}

// WriteTemp writes data as name into a new temporary directory and returns
// the directory; the caller removes it.
func WriteTemp(name string, data []byte) (string, error) {
	dir, err := os.MkdirTemp("", "nova-policy-*")
	if err != nil {
		return "", fmt.Errorf("creating a directory for %s: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("writing %s: %w", name, err)
	}
	return dir, nil
}

// capped is a buffer that keeps at most limit bytes: the head for stdout
// (a JSON document), the tail for stderr (the explanation).
type capped struct {
	bytes.Buffer
	limit     int
	truncated bool
}

func (c *capped) Write(p []byte) (int, error) {
	n := len(p)
	if c.Len()+len(p) > c.limit {
		c.truncated = true
		if c.limit < 1<<20 {
			// stderr: keep the newest bytes.
			all := make([]byte, 0, c.Len()+len(p))
			all = append(append(all, c.Buffer.Bytes()...), p...)
			c.Buffer.Reset()
			c.Buffer.Write(all[len(all)-c.limit:])
			return n, nil
		}
		p = p[:max(0, c.limit-c.Len())]
	}
	c.Buffer.Write(p)
	return n, nil
}
