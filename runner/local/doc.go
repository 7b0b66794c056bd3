// Package local implements Nova's local mode: where a run keeps its files on
// one machine when no forge or evidence repo is configured.
package local
