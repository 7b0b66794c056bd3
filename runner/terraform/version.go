package terraform

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/go-version"
)

// minVersion is the oldest terraform Nova runs: the first with every flag
// it passes (-json for plan and apply, plan -refresh-only). Parsed on first
// use: go-version compiles its version regexp on its first parse.
var minVersion = sync.OnceValue(func() *version.Version { return version.Must(version.NewVersion("0.15.4")) })

// probeTimeout bounds `terraform version`, which reads nothing but its
// own binary: a binary that hangs there must not hold the probe forever.
const probeTimeout = time.Minute

// probes holds what each terraform binary answered `version -json`, for
// the whole process: the binary does not change under a running Nova, and
// a process running many contracts would otherwise start one more
// terraform per contract to ask. The probe runs with the environment of
// whichever workspace asks first; the version does not depend on it.
var probes sync.Map // exec path → *probe

// probe is one asking of a terraform binary's version; done is closed
// once err (nil: a version Nova runs) is set.
type probe struct {
	done chan struct{}
	err  error
}

// probeOf is the probe of execPath, started with env when there is none.
func probeOf(execPath string, env []string) *probe {
	if p, ok := probes.Load(execPath); ok {
		return p.(*probe)
	}
	p := &probe{done: make(chan struct{})}
	if earlier, loaded := probes.LoadOrStore(execPath, p); loaded {
		return earlier.(*probe)
	}
	go p.ask(execPath, env)
	return p
}

// ask runs `terraform version -json`. It runs for whichever workspace
// needs it first, so no caller's context ends it; a failed probe is
// forgotten, and the next workspace asks again.
func (p *probe) ask(execPath string, env []string) {
	defer close(p.done)
	p.err = askVersion(execPath, env)
	if p.err != nil {
		probes.CompareAndDelete(execPath, p)
	}
}

func askVersion(execPath string, env []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	cmd := terraformCmd(ctx, execPath, "", env, "version", "-json")
	var stdout bytes.Buffer
	stderr := &tailBuffer{max: stderrKept}
	cmd.Stdout, cmd.Stderr = &limitedWriter{w: &stdout, n: 1 << 20}, stderr
	// The error says why in words only: a probe that failed is never an
	// interruption of the command it explains, and an apply that never
	// started must not be taken for one of unknown outcome.
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("asking %s its version: %v\n%s", execPath, err, stderr)
	}
	var out struct {
		Version string `json:"terraform_version"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || out.Version == "" {
		return fmt.Errorf("%s does not report its version as JSON, as terraform %s and later do", execPath, minVersion())
	}
	return versionProblem(execPath, out.Version)
}

// versionProblem refuses a reported version that is not one or is older
// than minVersion; who names the terraform that reported it.
func versionProblem(who, reported string) error {
	v, err := version.NewVersion(reported)
	if err != nil {
		return fmt.Errorf("%s reports version %q, which is not a version: %v", who, reported, err)
	}
	if v.LessThan(minVersion()) {
		return fmt.Errorf("%s is terraform %s; Nova needs %s or later", who, v, minVersion())
	}
	return nil
}

// unsupported asks the workspace's terraform its version once one of its
// commands has failed, and says why when the binary is not one Nova runs
// (too old for the flags Nova passes, or not reporting its version); nil
// when it is, or when ctx ends the wait. A run whose commands succeed
// never asks: those flags were understood, and the plan's JSON names the
// version that made it (checkPlanVersion). A supported version is kept
// for the process; a failed probe is asked again by the next failure.
func (w *Workspace) unsupported(ctx context.Context) error {
	p := probeOf(w.opts.ExecPath, w.env)
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return nil
	}
}

// checkPlanVersion refuses a plan made by a terraform Nova does not run.
// Real terraform names its version in every plan's JSON; a plan that does
// not is checked by asking the binary.
func (w *Workspace) checkPlanVersion(ctx context.Context, reported string) error {
	if reported == "" {
		return w.unsupported(ctx)
	}
	return versionProblem("the terraform that made the plan", reported)
}

// limitedWriter writes at most n bytes to w and drops the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.n -= k
		_, _ = l.w.Write(p[:k])
	}
	return len(p), nil
}
