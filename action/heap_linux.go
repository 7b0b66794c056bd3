package main

import (
	"runtime"
	"runtime/debug"
	"syscall"
	"unsafe"
)

// hugeHeapBytes covers what a pipeline command's heap grows to (a
// no-change run peaks near 20 MB; a monorepo run goes past it and the
// rest of its heap simply uses small pages).
const hugeHeapBytes = 32 << 20

// preferHugePages backs the next hugeHeapBytes of Go heap with transparent
// huge pages where the kernel leaves that to the process (the "madvise"
// setting, the default on most distributions). Each first touch of a
// 4 KiB page is a fault, and on the virtual machines CI runners are,
// faults cost several microseconds each: a no-change run took ~5 000 of
// them, close to half of its own CPU. One 2 MiB page replaces 512 faults.
//
// Go maps its heap as it grows and no longer asks for huge pages itself,
// so Nova makes the runtime map a large region now (one allocation that
// is never touched), advises it, and frees it; later spans are carved from
// that same advised region. Any error leaves the heap as it was.
func preferHugePages() {
	// The allocation alone would start a collection that cannot free it
	// yet; the forced one below is the only one needed.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	region := make([]byte, hugeHeapBytes)
	const huge = 2 << 20
	start := uintptr(unsafe.Pointer(unsafe.SliceData(region)))
	skip := int((start+huge-1)&^(huge-1) - start)
	if whole := (len(region) - skip) &^ (huge - 1); whole > 0 {
		_ = syscall.Madvise(region[skip:skip+whole], syscall.MADV_HUGEPAGE)
	}
	runtime.GC()
}
