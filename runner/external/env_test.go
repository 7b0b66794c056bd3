package external

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEnviron(t *testing.T) {
	// Every variable, and whether checkov, kyverno-json and infracost each
	// see it.
	tests := []struct {
		kv                          string
		checkov, kyverno, infracost bool
	}{
		{"PATH=/usr/bin", true, true, true},
		{"HOME=/home/runner", true, true, true},
		{"TMPDIR=/tmp", true, true, true},
		{"USER=runner", true, true, true},
		{"LANG=C.UTF-8", true, true, true},
		{"LC_ALL=C.UTF-8", true, true, true},
		{"LC_CTYPE=C.UTF-8", true, true, true},
		{"TZ=UTC", true, true, true},
		{"SSL_CERT_FILE=/etc/ssl/cert.pem", true, true, true},
		{"SSL_CERT_DIR=/etc/ssl/certs", true, true, true},
		{"HTTP_PROXY=http://proxy:3128", true, true, true},
		{"HTTPS_PROXY=http://proxy:3128", true, true, true},
		{"NO_PROXY=localhost", true, true, true},
		{"http_proxy=http://proxy:3128", true, true, true},
		{"https_proxy=http://proxy:3128", true, true, true},
		{"no_proxy=localhost", true, true, true},
		{"CHECKOV_LOG_LEVEL=DEBUG", true, false, false},
		{"BC_API_KEY=prisma", true, false, false},
		{"KYVERNO_EXPERIMENTAL=true", false, true, false},
		{"INFRACOST_API_KEY=ico-x", false, false, true},
		// nova's secrets and the runner's credentials: never.
		{"NOVA_SIGNING_KEY=key", false, false, false},
		{"NOVA_EVIDENCE_TOKEN=token", false, false, false},
		{"NOVA_COMMIT_KEY_PASSPHRASE=pass", false, false, false},
		{"COSIGN_PASSWORD=pass", false, false, false},
		{"GITHUB_TOKEN=ghs_x", false, false, false},
		{"GITEA_TOKEN=x", false, false, false},
		{"ACTIONS_ID_TOKEN_REQUEST_TOKEN=x", false, false, false},
		{"ACTIONS_RUNTIME_TOKEN=x", false, false, false},
		{"AWS_ACCESS_KEY_ID=AKIA", false, false, false},
		{"AWS_SECRET_ACCESS_KEY=x", false, false, false},
		{"SSH_AUTH_SOCK=/tmp/agent", false, false, false},
		// Near misses of allowed names.
		{"PATHEXT=.sh", false, false, false},
		{"LANGUAGE=en", false, false, false},
		{"Path=/usr/bin", false, false, false},
		{"HOME", false, false, false},
	}
	for _, tool := range []struct {
		name string
		sees func(i int) bool
	}{
		{Checkov, func(i int) bool { return tests[i].checkov }},
		{KyvernoJSON, func(i int) bool { return tests[i].kyverno }},
		{Infracost, func(i int) bool { return tests[i].infracost }},
		{"evil.sh", func(i int) bool { return tests[i].checkov && tests[i].kyverno }},
	} {
		t.Run(tool.name, func(t *testing.T) {
			var all, want []string
			for i, tc := range tests {
				all = append(all, tc.kv)
				if tool.sees(i) {
					want = append(want, tc.kv)
				}
			}
			if diff := cmp.Diff(want, Environ(tool.name, all)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
	if got := Environ(Checkov, nil); got == nil || len(got) != 0 {
		t.Errorf("Environ of nothing = %#v, want empty and not nil (nil would pass nova's whole environment)", got)
	}
}
