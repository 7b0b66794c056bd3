package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/templates"
)

// novaReleases is where Nova's release workflow (workflows-src/release.yml)
// publishes each tag's binaries and their SHA256SUMS.
const novaReleases = "https://github.com/" + novaRepo + "/releases/download"

// releaseLookupTimeout bounds reading a release's SHA256SUMS at init.
const releaseLookupTimeout = 30 * time.Second

// maxChecksums bounds the SHA256SUMS read: a line per binary.
const maxChecksums = 1 << 20

// giteaBinary is how the Gitea workflow obtains nova, and a line that
// says so for the scaffold's output:
//
//   - --nova-url and --nova-sha256: that binary;
//   - --nova-source or --nova-commit: a build from source;
//   - else, when this nova is a release (vX.Y.Z), that release's linux/amd64
//     binary, its sha256 read from the release's SHA256SUMS, so the runner
//     needs neither Go nor the source;
//   - else a build of the commit this nova was built from (builtFrom),
//     saying why no binary was pinned.
func giteaBinary(ctx context.Context, f InitFlags, version, builtFrom string) (templates.Binary, string, error) {
	b := templates.Binary{Version: version, ReleaseURL: f.NovaURL, SHA256: f.NovaSHA256,
		Source: firstNonEmpty(f.NovaSource, novaSource), Commit: firstNonEmpty(f.NovaCommit, builtFrom)}
	fromSource := fmt.Sprintf("to build nova from source instead (the runner then needs Go and git): nova init --forge gitea --force --nova-commit %s", orPlaceholder(b.Commit, "<commit of "+version+">"))
	switch {
	case b.ReleaseURL != "" || b.SHA256 != "":
		if b.ReleaseURL == "" || !sha256Hex().MatchString(b.SHA256) {
			return b, "", runner.Errorf(runner.ConfigInvalid, "--nova-url and --nova-sha256 (64 lower-case hex) go together")
		}
		return b, fmt.Sprintf("the Gitea workflow fetches nova from %s and checks its sha256 %s; %s", b.ReleaseURL, b.SHA256, fromSource), nil
	case f.NovaSource != "" || f.NovaCommit != "":
		return sourceBuild(b, "")
	case !releaseVersion().MatchString(version):
		return sourceBuild(b, fmt.Sprintf("this nova is a development build (%s), not a release, so there is no release binary to pin", version))
	}
	base := firstNonEmpty(f.NovaReleases, novaReleases)
	asset := fmt.Sprintf("nova_%s_linux_amd64", version)
	sum, err := releaseChecksum(ctx, base+"/"+version+"/SHA256SUMS", asset)
	if err != nil {
		return sourceBuild(b, fmt.Sprintf("no release binary of nova %s could be read (%v)", version, err))
	}
	b.ReleaseURL, b.SHA256 = base+"/"+version+"/"+asset, sum
	return b, fmt.Sprintf("the Gitea workflow fetches nova %s's release binary for linux/amd64 (sha256 %s, from the release's SHA256SUMS, which `cosign verify-blob --bundle SHA256SUMS.sigstore.json` checks); %s",
		version, sum, fromSource), nil
}

// sourceBuild is the build-from-source way, with why no binary was
// pinned, or an error when this nova does not know what to build.
func sourceBuild(b templates.Binary, why string) (templates.Binary, string, error) {
	b.ReleaseURL, b.SHA256 = "", ""
	if !commitHex().MatchString(b.Commit) {
		msg := "this nova does not know the commit it was built from, so the Gitea workflow cannot pin it: pass --nova-commit, or --nova-url and --nova-sha256 of a release binary"
		if why != "" {
			msg = why + "; and " + msg
		}
		return b, "", runner.Errorf(runner.ConfigInvalid, "%s", msg)
	}
	note := fmt.Sprintf("the Gitea workflow builds nova from source (%s at %s, tag %s), so its runner needs Go and git; pass --nova-url and --nova-sha256 of a release binary to fetch one instead", b.Source, b.Commit, b.Version)
	if why != "" {
		note = why + ": " + note
	}
	return b, note, nil
}

func orPlaceholder(s, placeholder string) string {
	if s == "" {
		return placeholder
	}
	return s
}

// releaseChecksum reads asset's sha256 from the SHA256SUMS file at url, as
// `sha256sum` writes it: "<hex>  <name>" (or "*<name>" in binary mode).
func releaseChecksum(ctx context.Context, url, asset string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, releaseLookupTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s answered %s", url, resp.Status)
	}
	lines := bufio.NewScanner(io.LimitReader(resp.Body, maxChecksums))
	for lines.Scan() {
		f := strings.Fields(lines.Text())
		if len(f) == 2 && strings.TrimPrefix(f[1], "*") == asset && sha256Hex().MatchString(f[0]) {
			return f[0], nil
		}
	}
	if err := lines.Err(); err != nil {
		return "", fmt.Errorf("reading %s: %w", url, err)
	}
	return "", fmt.Errorf("%s lists no %s", url, asset)
}
