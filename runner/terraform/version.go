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

// ProbeVersion starts asking the terraform at execPath its version in the
// background, unless this process already has: the plan then finds the
// answer ready instead of waiting for one more terraform process before
// its init. It returns at once.
func ProbeVersion(execPath string, env map[string]string) {
	if execPath != "" {
		probeOf(execPath, environ(Environment(env)))
	}
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
	// interruption of the command that waited for it, and an apply that
	// never started must not be taken for one of unknown outcome.
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("asking %s its version: %v\n%s", execPath, err, stderr)
	}
	var out struct {
		Version string `json:"terraform_version"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || out.Version == "" {
		return fmt.Errorf("%s does not report its version as JSON, as terraform %s and later do", execPath, minVersion())
	}
	v, err := version.NewVersion(out.Version)
	if err != nil {
		return fmt.Errorf("%s reports version %q, which is not a version: %v", execPath, out.Version, err)
	}
	if v.LessThan(minVersion()) {
		return fmt.Errorf("%s is terraform %s; Nova needs %s or later", execPath, v, minVersion())
	}
	return nil
}

// ready waits for the version probe of the workspace's terraform: the
// first command of a process waits for it, the others find it answered.
// Only the caller's own context ends the wait (wrap then says why).
func (w *Workspace) ready(ctx context.Context) error {
	p := probeOf(w.opts.ExecPath, w.env)
	select {
	case <-p.done:
	default:
		select {
		case <-p.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return p.err
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
