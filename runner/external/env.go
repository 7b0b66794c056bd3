package external

import (
	"slices"
	"strings"
)

// baseEnv is what every tool may see of nova's environment: enough to find
// its own files, speak the runner's locale and reach the network through
// its proxy. Nothing else: nova's environment holds the evidence signing
// key, forge tokens and cloud credentials (NOVA_*, COSIGN_*, GITHUB_TOKEN,
// ACTIONS_*, AWS_*), and which binary runs as a tool is partly chosen by
// the repository under review.
var baseEnv = map[string]bool{
	"PATH": true, "HOME": true, "TMPDIR": true, "USER": true, "LANG": true, "TZ": true,
	"SSL_CERT_FILE": true, "SSL_CERT_DIR": true,
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "NO_PROXY": true,
	"http_proxy": true, "https_proxy": true, "no_proxy": true,
}

// basePrefixes are the variable families every tool may see.
var basePrefixes = []string{"LC_"}

// The tools Nova runs, as Command.Tool names them.
const (
	Checkov     = "checkov"
	KyvernoJSON = "kyverno-json"
	Infracost   = "infracost"
)

// toolPrefixes are each tool's own settings (checkov's Prisma Cloud key is
// BC_API_KEY), passed to that tool only.
var toolPrefixes = map[string][]string{
	Checkov:     {"CHECKOV_", "BC_"},
	KyvernoJSON: {"KYVERNO_"},
	Infracost:   {"INFRACOST_"},
}

// Environ returns the part of environ ("NAME=value" entries) that tool
// (Checkov, KyvernoJSON or Infracost) may see: the base allowlist and
// the tool's own prefixes. An unknown tool gets the base allowlist only.
func Environ(tool string, environ []string) []string {
	out := []string{}
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if ok && allowed(tool, name) {
			out = append(out, kv)
		}
	}
	return out
}

func allowed(tool, name string) bool {
	if baseEnv[name] {
		return true
	}
	for _, p := range slices.Concat(basePrefixes, toolPrefixes[tool]) {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
