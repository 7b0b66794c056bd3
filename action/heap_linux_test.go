package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestPreferHugePagesBacksTheHeap checks the effect, not the call: after
// preferHugePages, the heap the process goes on to allocate sits in a
// region advised for huge pages and is, at least in part, backed by them.
// It looks at a fresh process, as nova is when it calls it: in this test
// binary, after other tests, the heap has room enough below the region.
func TestPreferHugePagesBacksTheHeap(t *testing.T) {
	const child = "NOVA_TEST_HUGE_HEAP_CHILD"
	if os.Getenv(child) == "1" {
		preferHugePages()
		kept := make([][]byte, 0, 1<<14)
		for range 1 << 14 {
			kept = append(kept, make([]byte, 1024))
		}
		advised, huge := hugeMappings(t)
		fmt.Printf("advised=%d huge=%d kept=%d\n", advised, huge, len(kept))
		return
	}
	if mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || strings.Contains(string(mode), "[never]") {
		t.Fatalf("transparent huge pages are off on this machine (%q, %v): Nova's start-up relies on them", mode, err)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestPreferHugePagesBacksTheHeap$", "-test.count", "1")
	cmd.Env = append(os.Environ(), child+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the fresh process failed: %v\n%s", err, out)
	}
	var advised, huge, kept int64
	for _, line := range strings.Split(string(out), "\n") {
		if _, err := fmt.Sscanf(line, "advised=%d huge=%d kept=%d", &advised, &huge, &kept); err == nil {
			break
		}
	}
	if kept == 0 {
		t.Fatalf("the fresh process reported nothing:\n%s", out)
	}
	if advised < 30<<20 {
		t.Errorf("%d bytes of the address space are advised for huge pages, want the heap's 30 MiB or more", advised)
	}
	if huge == 0 {
		t.Errorf("no anonymous huge page backs the advised heap after allocating %d KiB", kept)
	}
}

// hugeMappings sums, over the mappings flagged "hg" in /proc/self/smaps,
// their size and the part of it backed by huge pages.
func hugeMappings(t *testing.T) (advised, huge int64) {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var size, anonHuge int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) == 3 && fields[0] == "Size:":
			size = kib(t, fields[1])
		case len(fields) == 3 && fields[0] == "AnonHugePages:":
			anonHuge = kib(t, fields[1])
		case len(fields) > 0 && fields[0] == "VmFlags:" && slices.Contains(fields[1:], "hg"):
			advised += size
			huge += anonHuge
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return advised, huge
}

func kib(t *testing.T, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("smaps: %v", err)
	}
	return n << 10
}
