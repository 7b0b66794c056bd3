package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nova-platform/nova/runner"
)

// monorepoSize is how many contracts BenchmarkMonorepo1000 generates.
const monorepoSize = 1000

// BenchmarkMonorepo1000 is `nova explain --all` over a generated repository
// of 1 000 contracts of the hello stack (terraform_data modules, no
// provider), committed to git so provenance reads a real commit: discovery,
// then schema, policy, NFR and confidence for every contract on every CPU,
// wired exactly as executeMany wires them (shared registry, platform rules
// and commit verification, per-directory policy engines). Plan is excluded, and so is
// recording events: the evidence repo's cost per event is
// BenchmarkEvidenceAppend's, and not what this measures.
func BenchmarkMonorepo1000(b *testing.B) {
	root, head := generateMonorepo(b, monorepoSize)
	cfg := Config{
		Command: "explain", Dir: root, ContractPath: ".nova/contract.yml", Commit: head,
		Select: SelectFlags{All: true, Parallel: runtime.NumCPU()}, Source: "urn:nova:bench",
	}
	env := Env{Getenv: func(string) string { return "" }, Environ: os.Environ(), Stdout: io.Discard, Stderr: io.Discard}
	ctx := b.Context()
	keysVerifier, err := commitVerifier(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	// CPU time is reported beside wall time: on a shared machine the wall
	// time says as much about the neighbours as about Nova.
	cpu0 := cpuTime(b)
	for b.Loop() {
		// The registry is loaded once per op, as once per process.
		reg, err := loadRegistry("")
		if err != nil {
			b.Fatal(err)
		}
		verifier := &onceVerifier{inner: keysVerifier, known: map[string]runner.CommitSignature{}}
		sel, err := selectContracts(ctx, cfg, reg)
		if err != nil {
			b.Fatal(err)
		}
		if len(sel.Contracts) != monorepoSize {
			b.Fatalf("discovered %d contracts, want %d", len(sel.Contracts), monorepoSize)
		}
		var failed atomic.Value
		parallel(len(sel.Contracts), cfg.Select.Parallel, func(i int) {
			c := sel.Contracts[i].Contract
			w := wiring{cfg: cfg.forContract(c), env: env, reg: reg, verifier: verifier}
			stages, err := w.stages(ctx)
			if err != nil {
				failed.Store(fmt.Sprintf("%s: %v", c.Path(), err))
				return
			}
			st := &runner.State{Dir: w.cfg.Dir, ContractPath: w.cfg.ContractPath, Commit: head}
			out := (&runner.Pipeline{Stages: stages}).Run(ctx, st)
			if out.Verdict != runner.Pass {
				failed.Store(fmt.Sprintf("%s: %s %s", c.Path(), out.Verdict, out.Reason))
			}
		})
		if f := failed.Load(); f != nil {
			b.Fatal(f)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/monorepoSize/1000, "ms/contract")
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N)/monorepoSize/1000, "cpu-ms/contract")
}

// cpuTime is the user and system CPU time the process has used so far, on
// every thread.
func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// generateMonorepo writes n copies of examples/hello, each with its own id
// and audience, under svc/NNNN, and commits them; it returns the root and
// the commit.
func generateMonorepo(b *testing.B, n int) (string, string) {
	b.Helper()
	tmpl, err := os.ReadFile(filepath.Join("..", "examples", "hello", ".nova", "contract.yml"))
	if err != nil {
		b.Fatal(err)
	}
	reports, err := filepath.Glob(filepath.Join("..", "examples", "hello", "reports", "*.xml"))
	if err != nil || len(reports) == 0 {
		b.Fatalf("the hello example's reports: %v", err)
	}
	root := b.TempDir()
	for i := range n {
		dir := filepath.Join(root, "svc", fmt.Sprintf("%04d", i))
		contract := strings.Replace(string(tmpl), "3b0c6f5e-8a41-4e8f-9d2a-6c1b7e4f2a90", fmt.Sprintf("3b0c6f5e-8a41-4e8f-9d2a-%012d", i), 1)
		contract = strings.Replace(contract, "audience: Nova", fmt.Sprintf("audience: team-%04d", i), 1)
		put(b, filepath.Join(dir, ".nova", "contract.yml"), contract)
		for _, r := range reports {
			data, err := os.ReadFile(r)
			if err != nil {
				b.Fatal(err)
			}
			put(b, filepath.Join(dir, "reports", filepath.Base(r)), string(data))
		}
	}
	return root, gitCommitAll(b, root, fmt.Sprintf("%d contracts", n))
}

// gitCommitAll commits everything under root, making it a repository
// first if it is not one, with git itself: go-git's worktree status is
// far slower on tens of thousands of files, and the commits are only the
// benchmark's setting.
func gitCommitAll(b *testing.B, root, msg string) string {
	b.Helper()
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		gitIn(b, root, "init", "-q")
	}
	gitIn(b, root, "add", "-A")
	// No gc in the background: it would pack the objects while the
	// benchmark reads them.
	gitIn(b, root, "-c", "gc.auto=0", "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "--no-gpg-sign", "-m", msg)
	return strings.TrimSpace(gitIn(b, root, "rev-parse", "HEAD"))
}

func gitIn(b *testing.B, dir string, args ...string) string {
	b.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_DATE=1970-01-01T00:00:00Z", "GIT_COMMITTER_DATE=1970-01-01T00:00:00Z")
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func put(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// wideMonorepoSize is how many contracts BenchmarkMonorepo10000 generates.
const wideMonorepoSize = 10000

// BenchmarkMonorepo10000 is the selection and the validation of a
// repository of 10 000 contracts (examples/hello's, each with its own id
// and audience), run in-process as the commands run, `--parallel` the
// CPUs:
//
//   - matrix-changed: `nova matrix --changed` of a change that edits every
//     contract, the worst case of the selection: discovery, the diff of
//     base and head, the matching by id and the packing into 256 shards;
//   - validate-all: `nova validate --all`: discovery, then the schema and
//     policy stages of every contract.
//
// Goals (docs/benchmarks.md): the selection within 2 s, the validation
// within 30 s on 2 cores. They are reported, never asserted.
func BenchmarkMonorepo10000(b *testing.B) {
	root, base := generateMonorepo(b, wideMonorepoSize)
	head := editEveryContract(b, root)
	// Packed, as a checkout fetched from a forge is.
	gitIn(b, root, "repack", "-adq")
	vars := map[string]string{"PWD": root, "HOME": b.TempDir()}
	env := Env{Getenv: func(k string) string { return vars[k] }, Environ: os.Environ(), Stdout: io.Discard, Stderr: io.Discard}
	for _, bc := range []struct {
		name string
		args []string
	}{
		{"matrix-changed", []string{"matrix", "--dir", root, "--changed", "--base", base, "--head", head}},
		{"validate-all", []string{"validate", "--dir", root, "--all", "--state-dir", b.TempDir()}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cpu0 := cpuTime(b)
			for b.Loop() {
				var stderr strings.Builder
				env := env
				env.Args, env.Stderr = bc.args, &stderr
				if code := exitCode(run(b.Context(), env)); code != ExitPass {
					b.Fatalf("nova %s: exit %d\n%s", strings.Join(bc.args, " "), code, stderr.String())
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s")
			b.ReportMetric((cpuTime(b)-cpu0).Seconds()/float64(b.N), "cpu-s")
		})
	}
}

// editEveryContract commits a change to every contract of a generated
// monorepo and returns the commit.
func editEveryContract(b *testing.B, root string) string {
	b.Helper()
	contracts, err := filepath.Glob(filepath.Join(root, "svc", "*", ".nova", "contract.yml"))
	if err != nil || len(contracts) == 0 {
		b.Fatalf("the generated contracts: %v", err)
	}
	for _, c := range contracts {
		data, err := os.ReadFile(c)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(c, []byte(strings.Replace(string(data), "audience: team-", "audience: crew-", 1)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return gitCommitAll(b, root, "edit every contract")
}
