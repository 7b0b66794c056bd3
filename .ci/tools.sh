#!/usr/bin/env bash
# Installs the programs Nova's tests run for real, built from the Go module
# proxy into a cache outside the repository (never committed). Prints the
# bin directory to put on PATH.
#
#   .ci/tools.sh terraform   # terraform, unless one is already on PATH
#   .ci/tools.sh cosign      # cosign (evidence interop tests), unless on PATH
#   .ci/tools.sh gpg         # gpg (git verify-commit interop), from Debian if missing
#   .ci/tools.sh conftest    # conftest (policy benchmark and conftest parity test), unless on PATH
#   .ci/tools.sh gitea       # gitea (a real forge for the Gitea adapter's tests), always the pinned one
#   .ci/tools.sh chromium    # chromium (opens the audit report headless), from Debian if missing
set -euo pipefail

TOOLS_BIN="${NOVA_TOOLS_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/nova-tools/bin}"
mkdir -p "$TOOLS_BIN"
# Tools that need more than a binary (gitea's templates) keep it here.
TOOLS_CACHE="$(cd "$TOOLS_BIN/.." && pwd)"
export PATH="$TOOLS_BIN:$PATH"

# Exact versions: the module proxy refuses @latest for some modules, and a
# test run must not change because a new release appeared.
TERRAFORM_VERSION=v1.5.7
# cosign v2 builds with the Go this project pins (v2.6.x needs go >= 1.25);
# v3 changed verify-blob's defaults, and the tests exercise the v2 CLI.
COSIGN_VERSION=v2.6.5
# conftest v0.71.1 builds with Go 1.26 and embeds OPA 1.21, the Rego
# dialect Nova's policies are written in.
CONFTEST_VERSION=v0.71.1
# gitea v1.23.8 is the newest the module proxy serves whole (later ones need
# modules it does not serve); the giteatest helper expects this exact one.
GITEA_VERSION=v1.23.8

install_terraform() {
  if command -v terraform >/dev/null 2>&1; then
    return
  fi
  echo "installing terraform $TERRAFORM_VERSION into $TOOLS_BIN (go install; takes a few minutes once)" >&2
  GOBIN="$TOOLS_BIN" GOFLAGS=-mod=mod go install "github.com/hashicorp/terraform@$TERRAFORM_VERSION" >&2
}

install_cosign() {
  if command -v cosign >/dev/null 2>&1; then
    return
  fi
  echo "installing cosign $COSIGN_VERSION into $TOOLS_BIN (go install; takes a few minutes once)" >&2
  # GOTOOLCHAIN=local: fail rather than fetch another Go if a dependency
  # ever asks for one; the tests then skip with the reason.
  GOBIN="$TOOLS_BIN" GOFLAGS=-mod=mod GOTOOLCHAIN=local \
    go install "github.com/sigstore/cosign/v2/cmd/cosign@$COSIGN_VERSION" >&2
}

install_gpg() {
  if command -v gpg >/dev/null 2>&1; then
    return
  fi
  echo "installing gnupg from Debian" >&2
  if [ "$(id -u)" -eq 0 ]; then
    (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y gnupg) >&2
  else
    (sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y gnupg) >&2
  fi
}

# The audit report is checked in a real browser: Debian's chromium, run
# headless by the report test (no network, no sandbox as root).
install_chromium() {
  if command -v chromium >/dev/null 2>&1; then
    return
  fi
  echo "installing chromium from Debian" >&2
  if [ "$(id -u)" -eq 0 ]; then
    (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium fonts-dejavu-core) >&2
  else
    (sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium fonts-dejavu-core) >&2
  fi
}

install_conftest() {
  if command -v conftest >/dev/null 2>&1; then
    return
  fi
  echo "installing conftest $CONFTEST_VERSION into $TOOLS_BIN (go install; takes a few minutes once)" >&2
  GOBIN="$TOOLS_BIN" GOFLAGS=-mod=mod GOTOOLCHAIN=local \
    go install "github.com/open-policy-agent/conftest@$CONFTEST_VERSION" >&2
}

# Gitea is not `go install`able (its go.mod has replace directives), so its
# module source is copied into the cache and built there. Built without the
# bindata tag it reads options/, templates/ and public/ from that source at
# run time, so the source stays, and gitea-$GITEA_VERSION.src next to the
# binary names it for runner/gitea/giteatest. A gitea already on PATH is not
# trusted: the tests need this version and its source tree.
install_gitea() {
  local bin="$TOOLS_BIN/gitea-$GITEA_VERSION"
  local src="$TOOLS_CACHE/gitea-src-$GITEA_VERSION"
  if [ ! -x "$bin" ] || [ ! -d "$src/templates" ]; then
    echo "building gitea $GITEA_VERSION into $TOOLS_BIN (go build with cgo sqlite; takes 5-8 minutes once)" >&2
    local mod
    # Outside any module, so no go.mod or go.sum is touched.
    mod="$(cd "$TOOLS_CACHE" && GO111MODULE=on go mod download -json "code.gitea.io/gitea@$GITEA_VERSION" |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
    if [ -z "$mod" ] || [ ! -d "$mod" ]; then
      echo "go mod download gave no source for code.gitea.io/gitea@$GITEA_VERSION" >&2
      exit 1
    fi
    # Copy to a temporary name and rename, so an interrupted run never
    # leaves a half-copied tree that a later run would take as complete.
    rm -rf "$src" "$src.tmp"
    cp -R "$mod" "$src.tmp"
    chmod -R u+w "$src.tmp"
    mv "$src.tmp" "$src"
    # Same for the binary: only a finished build gets the name tests look for.
    (cd "$src" && CGO_ENABLED=1 GOTOOLCHAIN=local GOFLAGS=-buildvcs=false \
      go build -tags 'sqlite sqlite_unlock_notify' \
        -ldflags "-s -w -X 'main.Version=${GITEA_VERSION#v}'" \
        -o "$bin.tmp" .) >&2
    mv "$bin.tmp" "$bin"
  fi
  printf '%s\n' "$src" >"$bin.src"
  ln -sfn "gitea-$GITEA_VERSION" "$TOOLS_BIN/gitea"
}

for tool in "$@"; do
  case "$tool" in
    terraform) install_terraform ;;
    cosign) install_cosign ;;
    gpg) install_gpg ;;
    conftest) install_conftest ;;
    gitea) install_gitea ;;
    chromium) install_chromium ;;
    *) echo "unknown tool: $tool" >&2; exit 2 ;;
  esac
done
echo "$TOOLS_BIN"
