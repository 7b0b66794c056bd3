package main

import (
	"bufio"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestPreferHugePagesBacksTheHeap checks the effect, not the call: after
// preferHugePages, the heap the process goes on to allocate sits in a
// region advised for huge pages and is, at least in part, backed by them.
func TestPreferHugePagesBacksTheHeap(t *testing.T) {
	if mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || strings.Contains(string(mode), "[never]") {
		t.Fatalf("transparent huge pages are off on this machine (%q, %v): Nova's start-up relies on them", mode, err)
	}
	preferHugePages()
	kept := make([][]byte, 0, 1<<14)
	for range 1 << 14 {
		kept = append(kept, make([]byte, 1024))
	}
	advised, huge := hugeMappings(t)
	if advised < 30<<20 {
		t.Errorf("%d bytes of the address space are advised for huge pages, want the heap's 30 MiB or more", advised)
	}
	if huge == 0 {
		t.Errorf("no anonymous huge page backs the advised heap after allocating %d KiB", len(kept))
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
