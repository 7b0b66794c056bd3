package checkout

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/nova-platform/nova/runner"
)

// tree is a checkout with every kind of file a hostile repository can hold.
func tree(t *testing.T) (dir, outside string) {
	t.Helper()
	dir, outside = t.TempDir(), t.TempDir()
	write := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, ".nova", "contract.yml"), "id: x\n")
	write(filepath.Join(dir, "big"), string(make([]byte, 2048)))
	write(filepath.Join(outside, "secret"), "s3cret\n")
	link(".nova/contract.yml", "inside-link")
	link(filepath.Join(outside, "secret"), "outside-link")
	link("../../../../../../../../etc/passwd", "relative-escape")
	link("/dev/zero", "zero")
	link("/", "root")
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, outside
}

func TestReadFile(t *testing.T) {
	dir, outside := tree(t)
	tests := []struct {
		rel      string
		want     string
		reason   runner.Reason
		notExist bool
	}{
		{".nova/contract.yml", "id: x\n", "", false},
		{"./.nova/../.nova/contract.yml", "id: x\n", "", false},
		{filepath.Join(dir, ".nova/contract.yml"), "id: x\n", "", false}, // absolute, inside
		{"inside-link", "id: x\n", "", false},
		{"missing.yml", "", "", true},
		{"../../../etc/passwd", "", runner.PathOutsideCheckout, false},
		{"/etc/passwd", "", runner.PathOutsideCheckout, false},
		{filepath.Join(outside, "secret"), "", runner.PathOutsideCheckout, false},
		{"outside-link", "", runner.PathOutsideCheckout, false},
		{"relative-escape", "", runner.PathOutsideCheckout, false},
		{"zero", "", runner.PathOutsideCheckout, false},
		{"root/etc/passwd", "", runner.PathOutsideCheckout, false},
		{"fifo", "", runner.FileNotRegular, false},
		{".nova", "", runner.FileNotRegular, false},
		{"big", "", runner.FileTooLarge, false},
	}
	for _, tt := range tests {
		t.Run(tt.rel, func(t *testing.T) {
			got, err := ReadFile(dir, tt.rel, 1024)
			switch {
			case tt.notExist:
				if !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("err %v, want not-exist", err)
				}
			case tt.reason != "":
				if runner.ReasonOf(err) != tt.reason {
					t.Errorf("err %v (%s), want %s", err, runner.ReasonOf(err), tt.reason)
				}
			case err != nil || string(got) != tt.want:
				t.Errorf("ReadFile = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestOpenDir(t *testing.T) {
	dir, outside := tree(t)
	if err := os.MkdirAll(filepath.Join(dir, ".nova", "policy"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "policy-out")); err != nil {
		t.Fatal(err)
	}
	r, err := OpenDir(dir, ".nova/policy")
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	for _, rel := range []string{"policy-out", "root", "../x"} {
		if _, err := OpenDir(dir, rel); runner.ReasonOf(err) != runner.PathOutsideCheckout {
			t.Errorf("OpenDir(%s): %v, want %s", rel, err, runner.PathOutsideCheckout)
		}
	}
	if _, err := OpenDir(dir, "nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing dir: %v", err)
	}
}
