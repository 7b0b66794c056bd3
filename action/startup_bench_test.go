package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkVersionStartup measures what starting nova costs before it does
// anything (issue 13, goal 4: `nova version` ≤ 10 ms of CPU). Every package
// linked into the binary runs its init whatever the command, so this is
// the floor under every command. Each op execs, one after the other so
// load hits them alike:
//   - nova version (cpu-ms/run, user+sys from the child's rusage; and
//     faults/run, its minor page faults, a third of its CPU is the kernel
//     mapping in pages of the binary and the heap);
//   - an empty Go program (empty-cpu-ms/run): the runtime's own start-up;
//   - a program that only imports every third-party package nova links
//     (deps-cpu-ms/run): the dependencies' package inits, which Nova
//     cannot make lazy; nova's figure less this one is Nova's own.
//
// With NOVA_BENCH_BASE set to another nova binary, it runs as a fourth
// side (base-cpu-ms/run). docs/benchmarks.md has the figures.
func BenchmarkVersionStartup(b *testing.B) {
	bin := novaBinary(b)
	dir := b.TempDir()
	empty := buildProgram(b, dir, "empty", nil)
	deps := buildProgram(b, dir, "deps", thirdPartyDeps(b))
	base := os.Getenv("NOVA_BENCH_BASE")

	var nova, emptyCPU, depsCPU, baseCPU time.Duration
	var faults int64
	runs := 0
	for b.Loop() {
		cpu, f := processCPU(b, bin, "version")
		nova += cpu
		faults += f
		cpu, _ = processCPU(b, empty)
		emptyCPU += cpu
		cpu, _ = processCPU(b, deps)
		depsCPU += cpu
		if base != "" {
			cpu, _ = processCPU(b, base, "version")
			baseCPU += cpu
		}
		runs++
	}
	per := func(d time.Duration) float64 { return float64(d) / float64(runs) / float64(time.Millisecond) }
	b.ReportMetric(per(nova), "cpu-ms/run")
	b.ReportMetric(float64(faults)/float64(runs), "faults/run")
	b.ReportMetric(per(emptyCPU), "empty-cpu-ms/run")
	b.ReportMetric(per(depsCPU), "deps-cpu-ms/run")
	if base != "" {
		b.ReportMetric(per(baseCPU), "base-cpu-ms/run")
	}
}

// BenchmarkBinarySize reports the size of nova built as the image builds
// it (static, -trimpath) but unstripped (issue 13, goal 7: ≤ 50 MB). The op is only a
// stat; the figure is the MB metric.
func BenchmarkBinarySize(b *testing.B) {
	bin := novaBinary(b)
	var size int64
	for b.Loop() {
		fi, err := os.Stat(bin)
		if err != nil {
			b.Fatal(err)
		}
		size = fi.Size()
	}
	b.ReportMetric(float64(size)/1e6, "MB")
}

// processCPU runs name with args and returns the user+sys CPU it used and
// its minor page faults.
func processCPU(b *testing.B, name string, args ...string) (time.Duration, int64) {
	b.Helper()
	cmd := exec.Command(name, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	var faults int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		faults = ru.Minflt
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), faults
}

// thirdPartyDeps lists the packages outside the standard library and this
// module that nova links, less those no other module may import (their
// importers bring them in).
func thirdPartyDeps(b *testing.B) []string {
	b.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		b.Fatalf("go list: %v", err)
	}
	var deps []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/nova-platform/nova") || strings.Contains("/"+p+"/", "/internal/") {
			continue
		}
		deps = append(deps, p)
	}
	return deps
}

// buildProgram builds a main package that blank-imports imports. Its
// source is laid over this module's tree (go build -overlay) rather than
// written into it, so it resolves imports with nova's own go.mod and
// versions.
func buildProgram(b *testing.B, dir, name string, imports []string) string {
	b.Helper()
	var src strings.Builder
	src.WriteString("package main\n\n")
	for _, p := range imports {
		fmt.Fprintf(&src, "import _ %q\n", p)
	}
	src.WriteString("\nfunc main() {}\n")
	file := filepath.Join(dir, name+".go")
	if err := os.WriteFile(file, []byte(src.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		b.Fatal(err)
	}
	pkgDir := filepath.Join(wd, "testdata", "startup-"+name)
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(pkgDir, "main.go"): file}})
	if err != nil {
		b.Fatal(err)
	}
	overlayFile := filepath.Join(dir, name+".overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	if err := goBuild("-overlay", overlayFile, "-o", bin, pkgDir); err != nil {
		b.Fatalf("building the %s program: %v", name, err)
	}
	return bin
}
