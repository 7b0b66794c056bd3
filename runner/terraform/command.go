package terraform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
)

// stderrKept is how much of the end of terraform's stderr an error keeps:
// the diagnostic is at the end, and a chatty provider must not make an
// error (and the event that carries it) unbounded.
const stderrKept = 64 << 10

// command is `terraform args...` in the workspace, as terraform-exec would
// start it: on cancellation SIGINT so terraform can release its state
// lock, killed if it has not exited within interruptGrace; in its own
// process group, and dying with Nova.
func (w *Workspace) command(ctx context.Context, args ...string) *exec.Cmd {
	return terraformCmd(ctx, w.opts.ExecPath, w.dir, w.env, args...)
}

func terraformCmd(ctx context.Context, execPath, dir string, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, execPath, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = interruptGrace
	cmd.SysProcAttr = sysProcAttr()
	return cmd
}

// run runs one command to its end: stdout to stdout, stderr to the log,
// and the end of stderr into the error. The error keeps the
// *exec.ExitError for wrap to tell a verdict from an interruption.
func (w *Workspace) run(ctx context.Context, stdout io.Writer, args ...string) error {
	cmd := w.command(ctx, args...)
	stderr := &tailBuffer{max: stderrKept}
	cmd.Stdout, cmd.Stderr = stdout, io.MultiWriter(w.log, stderr)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w\n%s", err, stderr)
	}
	return nil
}

// errTooLarge is readJSON's answer to output beyond Options.MaxPlanJSON.
var errTooLarge = errors.New("terraform's JSON is larger than Nova reads")

// readJSON runs a command that prints one JSON document and decodes it
// into v, reading at most Options.MaxPlanJSON bytes: a plan or a state can
// be large, and it is decoded as it arrives instead of being held whole
// first. Nothing of it goes to the log, where it would only repeat the
// bundle or the state and may hold values that belong in neither.
func (w *Workspace) readJSON(ctx context.Context, v any, args ...string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := w.command(ctx, args...)
	stderr := &tailBuffer{max: stderrKept}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	counted := &countingReader{r: stdout, max: w.opts.MaxPlanJSON}
	decErr := json.NewDecoder(counted).Decode(v)
	if counted.exceeded {
		cancel()
		_ = cmd.Wait()
		return errTooLarge
	}
	_, _ = io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("%w\n%s", err, stderr)
	}
	if decErr != nil {
		return fmt.Errorf("reading its JSON: %w", decErr)
	}
	return nil
}

// countingReader stops a reader after max bytes, noting that it did.
type countingReader struct {
	r        io.Reader
	n, max   int64
	exceeded bool
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.n >= c.max {
		c.exceeded = true
		return 0, io.ErrUnexpectedEOF
	}
	if rest := c.max - c.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// tailBuffer keeps the last max bytes written to it (and at most twice
// that in memory).
type tailBuffer struct {
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// String is what was kept: the last max bytes.
func (t *tailBuffer) String() string {
	if len(t.buf) > t.max {
		return string(t.buf[len(t.buf)-t.max:])
	}
	return string(t.buf)
}

// syncWriter serialises writes to the log: terraform's stdout and stderr
// are copied to it by two goroutines at once.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
