package rego

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nova-platform/nova/runner"
)

// TestHostileConsumerPolicyGetsNothing: a consumer policy comes with the
// pull request under review, and Nova's jobs hold signing keys and tokens
// in their environment. A policy that tries to read the environment, read
// a file or reach the network, by every built-in that could, is refused
// before it runs: no request reaches the network, and nothing it could
// have read shows in any record or error.
func TestHostileConsumerPolicyGetsNothing(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"const": "network-canary"}`)
	}))
	defer srv.Close()
	// A JSON Schema's $ref may name a file: one that is itself a schema
	// comes back whole in the validation errors.
	file := filepath.Join(t.TempDir(), "canary.json")
	if err := os.WriteFile(file, []byte(`{"const": "file-canary"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NOVA_TEST_SIGNING_KEY", "env-canary")
	canaries := []string{"network-canary", "file-canary", "env-canary", "127.0.0.1"}

	tests := []struct{ name, reach, builtin string }{
		{"environment", `opa.runtime().env.NOVA_TEST_SIGNING_KEY`, "opa.runtime"},
		{"network", fmt.Sprintf(`http.send({"method": "get", "url": %q}).body`, srv.URL), "http.send"},
		{"DNS", `net.lookup_ip_addr("localhost")`, "net.lookup_ip_addr"},
		{"network through a schema", fmt.Sprintf(`json.match_schema({"a": 1}, {"$ref": %q})`, srv.URL+"/match.json"), "json.match_schema"},
		{"network through a schema check", fmt.Sprintf(`json.verify_schema({"$ref": %q})`, srv.URL+"/verify.json"), "json.verify_schema"},
		{"file through a schema", fmt.Sprintf(`json.match_schema({"a": 1}, {"$ref": %q})`, "file://"+file), "json.match_schema"},
		{"environment through a schema", `json.match_schema({"a": 1}, {"$ref": "file:///proc/self/environ"})`, "json.match_schema"},
	}
	// The type checker reads the schemas a rule's METADATA names; their
	// $refs must load nothing either.
	annotated := func(ref string) string {
		return fmt.Sprintf("package main\n\n# METADATA\n# schemas:\n#   - input: {\"$ref\": %q}\ndeny contains \"x\" if input.a == 1\n", ref)
	}
	for _, tc := range []struct{ name, policy string }{
		{"network through a schema annotation", annotated(srv.URL + "/annotation.json")},
		{"file through a schema annotation", annotated("file://" + file)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := requests.Load()
			pcrs, err := consumerEngine(t, mapFS{"hostile.rego": tc.policy}).Evaluate(t.Context(), planPayload(t, "microservice-pass.json"))
			if n := requests.Load() - before; n > 0 {
				t.Errorf("the policy reached the network: %d requests", n)
			}
			shown, merr := json.Marshal(pcrs)
			if merr != nil {
				t.Fatal(merr)
			}
			for _, c := range canaries {
				if text := string(shown) + fmt.Sprint(err); strings.Contains(text, c) {
					t.Errorf("%q reached the run's output:\n%s", c, text)
				}
			}
		})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			policy := fmt.Sprintf("package main\n\ndeny contains sprintf(\"got %%v\", [x]) if {\n\tx := %s\n}\n", tc.reach)
			before := requests.Load()
			pcrs, err := consumerEngine(t, mapFS{"hostile.rego": policy}).Evaluate(t.Context(), planPayload(t, "microservice-pass.json"))
			if n := requests.Load() - before; n > 0 {
				t.Errorf("the policy reached the network: %d requests", n)
			}
			shown, merr := json.Marshal(pcrs)
			if merr != nil {
				t.Fatal(merr)
			}
			text := string(shown) + fmt.Sprint(err)
			for _, c := range canaries {
				if strings.Contains(text, c) {
					t.Errorf("%q reached the run's output:\n%s", c, text)
				}
			}
			if runner.ReasonOf(err) != runner.PolicyCompileFailed || !strings.Contains(err.Error(), tc.builtin) {
				t.Errorf("error %v, want %s naming %s", err, runner.PolicyCompileFailed, tc.builtin)
			}
			for _, p := range pcrs {
				if strings.HasPrefix(p.RuleID, "consumer.") {
					t.Errorf("the hostile policy was evaluated: %+v", p)
				}
			}
		})
	}
}
