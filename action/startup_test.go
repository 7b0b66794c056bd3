package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// maxInitBytes is what one of Nova's packages may allocate at init: enough
// for a few small maps and errors (the most today is main's, 1.4 KB), not
// for a compiled regexp (`^[a-z]+$` alone is 2.3 KB) or a parsed template,
// which belong behind a sync.OnceValue.
const maxInitBytes = 2048

// TestPackageInitsAllocateLittle keeps heavy work out of Nova's package
// inits: every linked package's init runs on every command, `nova version`
// included (issue 13, goal 4; BenchmarkVersionStartup has the CPU). It
// reads the runtime's own account of each init (GODEBUG=inittrace=1), in
// bytes allocated, which unlike time does not depend on load.
func TestPackageInitsAllocateLittle(t *testing.T) {
	cmd := exec.Command(novaBinary(t), "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("nova version: %v\n%s", err, stderr.String())
	}
	seen := 0
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		// init <package> @<t> ms, <d> ms clock, <n> bytes, <m> allocs
		f := strings.Fields(sc.Text())
		if len(f) < 11 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		pkg := f[1]
		if pkg != "main" && !strings.HasPrefix(pkg, "github.com/nova-platform/nova/") {
			continue
		}
		seen++
		n, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("reading %q: %v", sc.Text(), err)
		}
		if n > maxInitBytes {
			t.Errorf("%s allocates %d bytes at init (at most %d): compile or parse on first use instead", pkg, n, maxInitBytes)
		}
	}
	if seen == 0 {
		t.Fatalf("no init trace of Nova's packages in:\n%s", stderr.String())
	}
}
