package imagetest

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
)

// busyboxPath is where Debian's busybox-static puts its binary.
const busyboxPath = "/bin/busybox"

var (
	jobImageOnce sync.Once
	jobImageTag  string
	jobImageErr  error
)

// jobImage is a job container image made from what is on the machine,
// since none can be pulled: a static busybox and a link for each of its
// commands, in a root filesystem streamed to `docker import`. It has what
// act's job container uses: /bin/sh for run steps, tail (act's
// entrypoint, `tail -f /dev/null`) and a /tmp.
func jobImage(t *testing.T) string {
	t.Helper()
	requireDocker(t)
	if interp := staticBusybox(t); interp != "" {
		t.Fatalf("%s asks for %s; the job image has no libc: install busybox-static (make tools)", busyboxPath, interp)
	}
	jobImageOnce.Do(func() { jobImageTag, jobImageErr = importJobImage() })
	if jobImageErr != nil {
		t.Fatal(jobImageErr)
	}
	return jobImageTag
}

func staticBusybox(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(busyboxPath); err != nil {
		t.Fatalf("no %s: install busybox-static (make tools, .ci/tools.sh busybox)", busyboxPath)
	}
	return interpreter(t, busyboxPath)
}

func importJobImage() (string, error) {
	list, err := exec.Command(busyboxPath, "--list-full").Output()
	if err != nil {
		return "", fmt.Errorf("%s --list-full: %w", busyboxPath, err)
	}
	bin, err := os.ReadFile(busyboxPath)
	if err != nil {
		return "", err
	}
	tag := "nova-imagetest-job:" + runSuffix
	cmd := exec.Command("docker", "import",
		"--change", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"--change", `CMD ["/bin/sh"]`, "-", tag)
	in, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return "", err
	}
	werr := writeBusyboxRoot(in, bin, strings.Fields(string(list)))
	in.Close()
	if err := cmd.Wait(); err != nil {
		return "", fmt.Errorf("docker import: %v\n%s", err, stderr.String())
	}
	if werr != nil {
		return "", werr
	}
	atExit(func() { _ = exec.Command("docker", "image", "rm", "--force", tag).Run() })
	return tag, nil
}

func writeBusyboxRoot(w io.Writer, busybox []byte, applets []string) error {
	tw := tar.NewWriter(w)
	dirs := map[string]bool{}
	var dir func(string) error
	dir = func(d string) error {
		if d == "." || d == "/" || d == "" || dirs[d] {
			return nil
		}
		if err := dir(path.Dir(d)); err != nil {
			return err
		}
		dirs[d] = true
		mode := int64(0o755)
		if d == "tmp" {
			mode = 0o1777
		}
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: mode})
	}
	for _, d := range []string{"bin", "tmp", "root", "etc"} {
		if err := dir(d); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(busybox))}); err != nil {
		return err
	}
	if _, err := tw.Write(busybox); err != nil {
		return err
	}
	slices.Sort(applets)
	for _, a := range applets {
		a = strings.TrimPrefix(a, "/")
		if a == "bin/busybox" {
			continue
		}
		if err := dir(path.Dir(a)); err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: a, Linkname: "/bin/busybox", Mode: 0o777}); err != nil {
			return err
		}
	}
	return tw.Close()
}

// handBackOnCleanup gives dir back to the user running the tests: the
// containers write into it as root, as GitHub's runner has them do, and a
// user who is not root could not remove what they left. It runs before
// t.TempDir's own cleanup, which was registered first.
func handBackOnCleanup(t *testing.T, dir string) {
	t.Helper()
	uid, gid := os.Geteuid(), os.Getegid()
	if uid == 0 {
		return
	}
	image := jobImage(t)
	t.Cleanup(func() {
		out, err := exec.Command("docker", "run", "--rm", "-v", dir+":/hand-back", image,
			"chown", "-R", fmt.Sprintf("%d:%d", uid, gid), "/hand-back").CombinedOutput()
		if err != nil {
			t.Errorf("handing %s back to uid %d: %v\n%s", dir, uid, err, out)
		}
	})
}
