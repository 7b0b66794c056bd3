package forgehttp

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// etagServer serves one resource whose text a test changes, with an ETag
// of its text, and answers 304 to an If-None-Match that names it, as
// GitHub does. It logs the status of every answer.
type etagServer struct {
	mu       sync.Mutex
	text     string
	statuses []int
}

func (s *etagServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := sha256.Sum256([]byte(s.text + r.Header.Get("Authorization")))
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("X-RateLimit-Remaining", "4999")
	if r.Method == http.MethodGet && r.Header.Get("If-None-Match") == etag {
		w.Header().Set("X-RateLimit-Remaining", "4998")
		s.statuses = append(s.statuses, http.StatusNotModified)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	s.statuses = append(s.statuses, http.StatusOK)
	_, _ = io.WriteString(w, s.text)
}

func (s *etagServer) set(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.text = text
}

func (s *etagServer) answered() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.statuses...)
}

// TestConditionalRepeatsAReadAsIfNoneMatch: the second read of an
// unchanged resource is a 304 on the wire and the whole body to the
// caller, with the 304's rate-limit headers; a changed one is read in
// full; another token never gets the first token's copy; writes pass.
func TestConditionalRepeatsAReadAsIfNoneMatch(t *testing.T) {
	s := &etagServer{text: "[1,2,3]"}
	srv := httptest.NewServer(s)
	defer srv.Close()
	client := &http.Client{Transport: NewConditional(nil)}
	get := func(token string) (string, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/repos/o/r/issues/7/comments", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, want 200", resp.StatusCode)
		}
		return string(body), resp.Header.Get("X-RateLimit-Remaining")
	}
	if body, _ := get("a"); body != "[1,2,3]" {
		t.Fatalf("first read: %q", body)
	}
	body, remaining := get("a")
	if body != "[1,2,3]" || remaining != "4998" {
		t.Errorf("second read: body %q, X-RateLimit-Remaining %q; want the kept body and the 304's header", body, remaining)
	}
	s.set("[1,2,3,4]")
	if body, _ := get("a"); body != "[1,2,3,4]" {
		t.Errorf("read after a change: %q", body)
	}
	if body, _ := get("b"); body != "[1,2,3,4]" {
		t.Errorf("another token's read: %q", body)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/repos/o/r/issues/7/comments", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := []int{200, 304, 200, 200, 200}
	if diff := cmp.Diff(want, s.answered()); diff != "" {
		t.Errorf("answers on the wire (-want +got):\n%s", diff)
	}
}

// TestConditionalPassesALongAnswerWhole: an answer too long to keep, its
// length not announced, still reaches the caller whole.
func TestConditionalPassesALongAnswerWhole(t *testing.T) {
	long := strings.Repeat("x", maxKeptBody+10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"long"`)
		w.(http.Flusher).Flush() // chunked: no Content-Length
		_, _ = io.WriteString(w, long)
	}))
	defer srv.Close()
	resp, err := (&http.Client{Transport: NewConditional(nil)}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || len(body) != len(long) {
		t.Errorf("read %d bytes (%v), want %d", len(body), err, len(long))
	}
}
