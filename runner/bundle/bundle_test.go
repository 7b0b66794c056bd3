package bundle

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/nova-platform/nova/runner"
)

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReadManifestRefusesHostileBundles covers the bundles a tampered
// artifact can hold: links to endless or foreign files, pipes, and parts
// missing. Each is refused before anything reads it, with its reason.
func TestReadManifestRefusesHostileBundles(t *testing.T) {
	outside := t.TempDir()
	write(t, filepath.Join(outside, "bundle.json"), `{"formatVersion":1}`)
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  runner.Reason
	}{
		{"whole", func(*testing.T, string) {}, ""},
		{"manifest links to /dev/zero", func(t *testing.T, dir string) { relink(t, "/dev/zero", filepath.Join(dir, ManifestFile)) }, runner.PathOutsideCheckout},
		{"manifest links out", func(t *testing.T, dir string) {
			relink(t, filepath.Join(outside, "bundle.json"), filepath.Join(dir, ManifestFile))
		}, runner.PathOutsideCheckout},
		{"manifest is a pipe", func(t *testing.T, dir string) { refifo(t, filepath.Join(dir, ManifestFile)) }, runner.FileNotRegular},
		{"tfplan links to /dev/zero", func(t *testing.T, dir string) { relink(t, "/dev/zero", filepath.Join(dir, PlanFile)) }, runner.PathOutsideCheckout},
		{"tfplan is a pipe", func(t *testing.T, dir string) { refifo(t, filepath.Join(dir, PlanFile)) }, runner.FileNotRegular},
		{"tfplan missing", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, PlanFile)) }, runner.PlanBundleInvalid},
		{"root links out", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, RootDir))
			relink(t, outside, filepath.Join(dir, RootDir))
		}, runner.PathOutsideCheckout},
		{"manifest not JSON", func(t *testing.T, dir string) { write(t, filepath.Join(dir, ManifestFile), "{") }, runner.PlanBundleInvalid},
		{"another format", func(t *testing.T, dir string) { write(t, filepath.Join(dir, ManifestFile), `{"formatVersion":9}`) }, runner.PlanBundleInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := Dir(t.TempDir())
			write(t, filepath.Join(dir, PlanFile), "plan")
			write(t, filepath.Join(dir, RootDir, "main.tf"), "")
			if err := WriteManifest(dir, Manifest{ContractID: "c-1", PlanDigest: "d"}); err != nil {
				t.Fatal(err)
			}
			tt.setup(t, dir)
			m, err := ReadManifest(dir)
			if tt.want == "" {
				if err != nil || m.PlanDigest != "d" {
					t.Fatalf("ReadManifest = %+v, %v", m, err)
				}
				return
			}
			if runner.ReasonOf(err) != tt.want {
				t.Errorf("ReadManifest: %v (%s), want %s", err, runner.ReasonOf(err), tt.want)
			}
		})
	}
}

func relink(t *testing.T, target, name string) {
	t.Helper()
	os.Remove(name)
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

func refifo(t *testing.T, name string) {
	t.Helper()
	os.Remove(name)
	if err := syscall.Mkfifo(name, 0o600); err != nil {
		t.Fatal(err)
	}
}

// FuzzReadManifest feeds the manifest reader arbitrary bytes as a bundle's
// bundle.json: it must return a manifest or an error with a reason code,
// never panic, and never accept a manifest of another format.
func FuzzReadManifest(f *testing.F) {
	f.Add([]byte(`{"formatVersion":1,"contractId":"c","planDigest":"d","environment":"dev"}`))
	f.Add([]byte(`{"formatVersion":2}`))
	f.Add([]byte(`{`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"formatVersion":1,"changes":{"add":-1},"createdAt":"not a time"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, PlanFile), "plan")
		if err := os.MkdirAll(filepath.Join(dir, RootDir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ManifestFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := ReadManifest(dir)
		if err != nil {
			if runner.ReasonOf(err) == runner.InternalError {
				t.Errorf("an error without a reason: %v", err)
			}
			return
		}
		if m.FormatVersion != formatVersion {
			t.Errorf("accepted format %d", m.FormatVersion)
		}
	})
}
