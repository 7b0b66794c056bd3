// Package prefault makes the nova binary's data segment resident at
// start-up in one system call, instead of one page fault for each page its
// package initialisers and the collector first touch. main imports it
// for that side effect alone; it imports nothing heavy, so its init runs
// before the large dependencies' (OPA, go-git, the forge SDKs).
package prefault
