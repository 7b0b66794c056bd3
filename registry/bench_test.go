package registry

import "testing"

// BenchmarkLoadEmbedded is what every run pays to read the registry built
// into the binary: part of a no-change run's own CPU.
func BenchmarkLoadEmbedded(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadEmbedded(); err != nil {
			b.Fatal(err)
		}
	}
}
