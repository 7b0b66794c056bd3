package evidence

import (
	"bytes"
	"io/fs"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCredentialsNeverTouchDisk: a token given in the repo URL is sent
// with each request and never written: not into the clone's config, not
// anywhere in the state dir. The remote is real git (git http-backend)
// behind basic auth, so the push succeeding proves the token was sent.
func TestCredentialsNeverTouchDisk(t *testing.T) {
	const secret = "s3cr3t-token"
	gitBin := tool(t, "git")
	root := t.TempDir()
	repo := filepath.Join(root, "evidence.git")
	if err := os.Rename(newBareRepo(t), repo); err != nil {
		t.Fatal(err)
	}
	backend := &cgi.Handler{Path: gitBin, Args: []string{"http-backend"}, Env: []string{
		"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=x-access-token",
	}}
	refused := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, pass, ok := r.BasicAuth(); !ok || user != "x-access-token" || pass != secret {
			refused++
			w.Header().Set("WWW-Authenticate", `Basic realm="evidence"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	defer srv.Close()
	url := strings.Replace(srv.URL, "http://", "http://x-access-token:"+secret+"@", 1) + "/evidence.git"

	keys, stateDir := newKeys(t), t.TempDir()
	s := openStoreIn(t, url, stateDir, keys)
	emitN(t, s, "c-1", 2)
	if p, err := s.Pending(); err != nil || len(p) != 0 {
		t.Fatalf("%d events not pushed (%v); the server refused %d requests", len(p), err, refused)
	}
	if rep := verifyRepo(t, repo, verifyOptions(t, keys)); !rep.OK() || rep.Events != 2 {
		t.Fatalf("verify: %d events%s", rep.Events, dumpFindings(rep))
	}
	// Verify over the URL sends the token too.
	if rep := verifyRepo(t, url, verifyOptions(t, keys)); !rep.OK() || rep.Events != 2 {
		t.Fatalf("verify over http: %d events%s", rep.Events, dumpFindings(rep))
	}
	s.Close()

	files := 0
	err := filepath.WalkDir(stateDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(path)
		if err == nil && bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the token", strings.TrimPrefix(path, stateDir))
		}
		return err
	})
	if err != nil || files == 0 {
		t.Fatalf("walking the state dir: %d files, %v", files, err)
	}
}
