// Package keylesstest runs what keyless signing talks to, for real and on
// loopback: an OIDC issuer that mints tokens shaped like GitHub Actions'
// (Issuer) and the real Fulcio binary from the tools cache trusting it
// (StartFulcio), and a Rekor transparency log over Trillian and PostgreSQL
// (StartRekor). Tests of keyless evidence and of signed releases build on
// them; nothing here reaches the internet.
package keylesstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Issuer is an OIDC provider on 127.0.0.1: a discovery document, a JWKS
// with one ES256 key, and tokens minted in process. Fulcio fetches the
// first two, exactly as it does from token.actions.githubusercontent.com.
type Issuer struct {
	// URL is the issuer (the tokens' iss and the discovery document's).
	URL    string
	key    *ecdsa.PrivateKey
	keyID  string
	signer jose.Signer
	// runs numbers the tokens' run_id, so two tokens never name one run.
	runs atomic.Int64
}

// NewIssuer starts an issuer that stops when the test ends.
func NewIssuer(t testing.TB) *Issuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("oidc issuer key: %v", err)
	}
	iss := &Issuer{key: key, keyID: "nova-test-1"}
	iss.signer, err = jose.NewSigner(
		jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: iss.keyID}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatalf("oidc issuer signer: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("oidc issuer listen: %v", err)
	}
	iss.URL = "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", iss.discovery)
	mux.HandleFunc("GET /.well-known/jwks", iss.jwks)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("oidc issuer: %v", err)
		}
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return iss
}

// The fields GitHub's discovery document has that a verifier reads.
func (iss *Issuer) discovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{
		"issuer":                                iss.URL,
		"jwks_uri":                              iss.URL + "/.well-known/jwks",
		"subject_types_supported":               []string{"public", "pairwise"},
		"response_types_supported":              []string{"id_token"},
		"claims_supported":                      []string{"sub", "aud", "exp", "iat", "iss", "jti", "nbf", "ref", "repository", "job_workflow_ref"},
		"id_token_signing_alg_values_supported": []string{"ES256"},
		"scopes_supported":                      []string{"openid"},
	})
}

func (iss *Issuer) jwks(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{
		Key: &iss.key.PublicKey, KeyID: iss.keyID, Algorithm: string(jose.ES256), Use: "sig",
	}}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// Job says which workflow run a token speaks for, in GitHub's terms. The
// zero values of the optional fields are filled in as a push to main of
// owner/repo would have them.
type Job struct {
	// Repository is owner/name.
	Repository string
	// Workflow is the workflow file's path in the repository, e.g.
	// .github/workflows/nova.yml.
	Workflow string
	// Ref is the ref the workflow ran from: refs/heads/main for a push to
	// main, refs/pull/7/merge for a pull request's run.
	Ref string
	// JobWorkflowRef overrides job_workflow_ref (the default is
	// Repository/Workflow@Ref): a reusable workflow names its own file.
	JobWorkflowRef string
	// SHA is the commit; EventName push unless set.
	SHA       string
	EventName string
	// Audience is "sigstore" unless set; TTL is ten minutes unless set.
	Audience string
	TTL      time.Duration
	// IssuedAt backdates a token (its exp follows from it and TTL).
	IssuedAt time.Time
}

// Token mints a signed ID token for job with GitHub Actions' claims
// (https://docs.github.com/actions/reference/openid-connect-reference),
// every one Fulcio's github-workflow issuer requires.
func (iss *Issuer) Token(t testing.TB, job Job) string {
	t.Helper()
	tok, err := iss.token(job)
	if err != nil {
		t.Fatalf("minting a token: %v", err)
	}
	return tok
}

func (iss *Issuer) token(job Job) (string, error) {
	if job.Repository == "" || job.Workflow == "" || job.Ref == "" {
		return "", errors.New("job needs Repository, Workflow and Ref")
	}
	owner, _, ok := strings.Cut(job.Repository, "/")
	if !ok {
		return "", fmt.Errorf("repository %q is not owner/name", job.Repository)
	}
	if job.SHA == "" {
		job.SHA = strings.Repeat("ab", 20)
	}
	if job.EventName == "" {
		job.EventName = "push"
	}
	if job.Audience == "" {
		job.Audience = "sigstore"
	}
	if job.TTL == 0 {
		job.TTL = 10 * time.Minute
	}
	if job.IssuedAt.IsZero() {
		job.IssuedAt = time.Now()
	}
	workflowRef := job.Repository + "/" + job.Workflow + "@" + job.Ref
	if job.JobWorkflowRef == "" {
		job.JobWorkflowRef = workflowRef
	}
	run := strconv.FormatInt(1000+iss.runs.Add(1), 10)
	std := jwt.Claims{
		Issuer:    iss.URL,
		Subject:   "repo:" + job.Repository + ":ref:" + job.Ref,
		Audience:  jwt.Audience{job.Audience},
		IssuedAt:  jwt.NewNumericDate(job.IssuedAt),
		NotBefore: jwt.NewNumericDate(job.IssuedAt),
		Expiry:    jwt.NewNumericDate(job.IssuedAt.Add(job.TTL)),
		ID:        "run-" + run,
	}
	gh := map[string]any{
		"ref":                   job.Ref,
		"sha":                   job.SHA,
		"repository":            job.Repository,
		"repository_id":         "4242",
		"repository_owner":      owner,
		"repository_owner_id":   "42",
		"repository_visibility": "private",
		"run_id":                run,
		"run_number":            "1",
		"run_attempt":           "1",
		"runner_environment":    "github-hosted",
		"actor":                 "octocat",
		"actor_id":              "1",
		"workflow":              "nova",
		"event_name":            job.EventName,
		"ref_type":              "branch",
		"workflow_ref":          workflowRef,
		"workflow_sha":          job.SHA,
		"job_workflow_ref":      job.JobWorkflowRef,
		"job_workflow_sha":      job.SHA,
	}
	return jwt.Signed(iss.signer).Claims(&std).Claims(gh).Serialize()
}

// WorkflowIdentity is the certificate identity (the SAN URI Fulcio writes,
// and `cosign verify-blob --certificate-identity`) of a token for job.
func WorkflowIdentity(job Job) string {
	ref := job.JobWorkflowRef
	if ref == "" {
		ref = job.Repository + "/" + job.Workflow + "@" + job.Ref
	}
	return "https://github.com/" + ref
}
