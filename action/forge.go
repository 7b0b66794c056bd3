package main

import (
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
)

// Forge is the CI system nova runs in.
type Forge string

const (
	NoForge Forge = ""
	GitHub  Forge = "github"
	Gitea   Forge = "gitea"
)

// detectForge tells the forge from the variables each runner sets. Gitea's
// runner sets GITHUB_ACTIONS too, for compatibility with GitHub's actions,
// so GITEA_ACTIONS is asked first.
func detectForge(getenv func(string) string) Forge {
	switch {
	case getenv("GITEA_ACTIONS") == "true":
		return Gitea
	case getenv("GITHUB_ACTIONS") == "true":
		return GitHub
	}
	return NoForge
}

// secretVariables hold values that must never be printed: tokens, keys and
// the passwords that unlock them.
var secretVariables = []string{
	"NOVA_EVIDENCE_TOKEN", "NOVA_SIGNING_KEY", "NOVA_SIGNING_KEY_PASSWORD", "COSIGN_PASSWORD",
	"NOVA_COMMIT_KEY", "NOVA_COMMIT_KEY_PASSPHRASE", "INFRACOST_API_KEY",
	"GITHUB_TOKEN", "GITEA_TOKEN", "NOVA_FORGE_TOKEN", "NOVA_STATE_PASSPHRASE",
}

// secrets collects the secret values of this process: the variables above
// and the password of an evidence repo URL that carries one. A multi-line
// value (a PEM key) is masked line by line, as the runners match masks per
// line.
func secrets(getenv func(string) string, evidenceRepo string) []string {
	var out []string
	add := func(v string) {
		for _, line := range strings.Split(v, "\n") {
			// Masking very short values would blank out ordinary words in
			// every log line.
			if line = strings.TrimSpace(line); len(line) >= 4 && !strings.HasPrefix(line, "-----") && !slices.Contains(out, line) {
				out = append(out, line)
			}
		}
	}
	for _, name := range slices.Concat(secretVariables, secretInputVariables()) {
		add(getenv(name))
	}
	// The pg backend's connection URL carries its database password.
	for _, raw := range []string{getenv("NOVA_EVIDENCE_REPO"), evidenceRepo, getenv("PG_CONN_STR")} {
		if u, err := url.Parse(raw); err == nil && u.User != nil {
			if pw, ok := u.User.Password(); ok {
				add(pw)
			}
		}
	}
	return out
}

// mask registers every secret with the runner (`::add-mask::`) before nova
// prints anything else, so that whatever goes wrong later, the log shows
// *** instead. Outside a forge's runner there is no log to protect.
func mask(w io.Writer, forge Forge, values []string) {
	if forge == NoForge {
		return
	}
	for _, v := range values {
		fmt.Fprintf(w, "::add-mask::%s\n", v)
	}
}
