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
#   .ci/tools.sh act         # act (runs workflows and the container action in Docker), always the pinned one
#   .ci/tools.sh busybox     # a static busybox from Debian: the shell of act's job container
#   .ci/tools.sh terraform-image  # the static terraform the action's image carries (make image)
#   .ci/tools.sh postgres    # PostgreSQL server binaries (the pg backend's tests), from Debian if missing
#   .ci/tools.sh chromium    # chromium (opens the audit report headless), from Debian if missing
#   .ci/tools.sh opentofu    # tofu (the second engine), always the pinned one, built from the module proxy
#   .ci/tools.sh opentofu-image  # the static tofu the action's image carries beside terraform (make image)
#   .ci/tools.sh fulcio      # fulcio (keyless evidence tests: a loopback CA), always the pinned one
#   .ci/tools.sh registry    # registry (an OCI registry on loopback: the signed-release test), always the pinned one
#   .ci/tools.sh trillian    # trillian_log_server/_signer and their PostgreSQL schema (Rekor's storage), always the pinned one
#   .ci/tools.sh rekor       # rekor-server (the keyless upload tests: a loopback transparency log), always the pinned one
#   .ci/tools.sh jq          # jq (the release's provenance predicate, .ci/release-sign.sh), from Debian if missing
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
# act v0.2.89 is the version the workflow tests were written against; its
# logs and flags (--pull, -P) are what they read.
ACT_VERSION=v0.2.89
# The Terraform the container image carries: the version Nova's CI plans
# with (workflows-src/ci.yml) and the official static build of it. Later
# Terraform cannot be built from the Go module proxy (its go.mod replaces
# nested modules the proxy's zip leaves out), so the image takes HashiCorp's
# release binary, found on PATH (setup-terraform in the release workflow).
TERRAFORM_IMAGE_VERSION=1.11.4
# OpenTofu, the second engine: the tests that could differ by engine run on
# it too, and the image carries the same build beside terraform. v1.12.6 is
# served whole by the module proxy; its go.mod has one replace directive,
# to a module the proxy also serves, so it is built inside its own module
# directory.
OPENTOFU_VERSION=v1.12.6
# Fulcio, Sigstore's certificate authority, run on loopback with an
# ephemeral CA by the keyless evidence tests. v1.8.8 is served whole by the
# module proxy and its go.mod has no replace directive, so go install builds
# it; its certificates carry the GitHub workflow extensions the tests read.
FULCIO_VERSION=v1.8.8
# The CNCF distribution registry, run on loopback by the signed-release test
# to push, sign and attest the image as the release does on ghcr.io.
# v3.1.2 is served whole by the module proxy, its go.mod has no replace
# directive and asks for go 1.26.0, so go install builds it.
REGISTRY_VERSION=v3.1.2
# Rekor, Sigstore's transparency log, run on loopback by the keyless upload
# tests over Trillian with PostgreSQL storage (no MySQL, no Redis). Rekor
# v1.5.5 and later ask for go >= 1.27; v1.5.4 builds with Go 1.26 and
# pins trillian v1.7.3, whose log server and signer have PostgreSQL
# storage. Neither go.mod has a replace directive, so go install builds them.
REKOR_VERSION=v1.5.4
TRILLIAN_VERSION=v1.7.3

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

# The pg backend and the cross-runner lock are tested against a real
# server, which .ci/postgres.sh starts per test; only the binaries are
# needed here.
install_postgres() {
  if [ -n "${NOVA_PG_BIN:-}" ] || command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    return
  fi
  echo "installing the PostgreSQL server from Debian" >&2
  if [ "$(id -u)" -eq 0 ]; then
    (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql) >&2
  else
    (sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql) >&2
  fi
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

# OpenTofu is not `go install`able either (its go.mod has a replace
# directive, which go install refuses): its module is copied out of the
# module cache and built there, where the directive applies. Built static
# (CGO_ENABLED=0) so the same binary runs in the image, which has no libc.
# The source is removed once the binary is built: nothing reads it later.
# A tofu already on PATH is not trusted: the tests record the exact version
# in plan digests and compare it.
install_opentofu() {
  local bin="$TOOLS_BIN/tofu-$OPENTOFU_VERSION"
  if [ ! -x "$bin" ]; then
    echo "building opentofu $OPENTOFU_VERSION into $TOOLS_BIN (go build; takes several minutes once)" >&2
    local mod
    # Outside any module, so no go.mod or go.sum is touched.
    mod="$(cd "$TOOLS_CACHE" && GO111MODULE=on go mod download -json "github.com/opentofu/opentofu@$OPENTOFU_VERSION" |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
    if [ -z "$mod" ] || [ ! -d "$mod" ]; then
      echo "go mod download gave no source for github.com/opentofu/opentofu@$OPENTOFU_VERSION" >&2
      exit 1
    fi
    local src="$TOOLS_CACHE/opentofu-src-$OPENTOFU_VERSION"
    rm -rf "$src"
    cp -R "$mod" "$src"
    chmod -R u+w "$src"
    # Only a finished build gets the name tests look for. The version
    # variable is what `tofu version` prints; without it a source build
    # calls itself a dev build of the base version.
    (cd "$src" && CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS='-buildvcs=false -mod=mod' \
      go build -trimpath \
        -ldflags "-s -w -X 'github.com/opentofu/opentofu/version.dev=no'" \
        -o "$bin.tmp" ./cmd/tofu) >&2
    mv "$bin.tmp" "$bin"
    rm -rf "$src"
  fi
  ln -sfn "tofu-$OPENTOFU_VERSION" "$TOOLS_BIN/tofu"
}

# Fulcio on PATH may be any version: the keyless tests read the extensions
# this one writes, so the pinned one is built under its own name and linked
# as plain fulcio.
install_fulcio() {
  local bin="$TOOLS_BIN/fulcio-$FULCIO_VERSION"
  if [ ! -x "$bin" ]; then
    echo "installing fulcio $FULCIO_VERSION into $TOOLS_BIN (go install; takes a few minutes once)" >&2
    # Into a directory of its own and renamed when done, so an interrupted
    # build never leaves a binary under the name tests look for.
    local tmp="$TOOLS_BIN/.fulcio-build"
    rm -rf "$tmp"
    GOBIN="$tmp" GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 \
      go install "github.com/sigstore/fulcio@$FULCIO_VERSION" >&2
    mv "$tmp/fulcio" "$bin"
    rm -rf "$tmp"
  fi
  ln -sfn "fulcio-$FULCIO_VERSION" "$TOOLS_BIN/fulcio"
}

# A registry on PATH may be another version (or docker's own, v2, with
# other config keys): the pinned one is built under its own name and
# linked as plain registry.
install_registry() {
  local bin="$TOOLS_BIN/registry-$REGISTRY_VERSION"
  if [ ! -x "$bin" ]; then
    echo "installing registry $REGISTRY_VERSION into $TOOLS_BIN (go install; takes a few minutes once)" >&2
    # Into a directory of its own and renamed when done, so an interrupted
    # build never leaves a binary under the name tests look for.
    local tmp="$TOOLS_BIN/.registry-build"
    rm -rf "$tmp"
    GOBIN="$tmp" GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 \
      go install "github.com/distribution/distribution/v3/cmd/registry@$REGISTRY_VERSION" >&2
    mv "$tmp/registry" "$bin"
    rm -rf "$tmp"
  fi
  ln -sfn "registry-$REGISTRY_VERSION" "$TOOLS_BIN/registry"
}

# Trillian's log server and signer, named with their version, and the
# PostgreSQL schema of the same version beside them: the tests create it
# in a fresh database before the servers start.
install_trillian() {
  local server="$TOOLS_BIN/trillian_log_server-$TRILLIAN_VERSION"
  local signer="$TOOLS_BIN/trillian_log_signer-$TRILLIAN_VERSION"
  local schema="$TOOLS_BIN/trillian-$TRILLIAN_VERSION-postgresql.sql"
  if [ ! -x "$server" ] || [ ! -x "$signer" ]; then
    echo "installing trillian $TRILLIAN_VERSION into $TOOLS_BIN (go install; takes a few minutes once)" >&2
    # Into a directory of its own and renamed when done, so an interrupted
    # build never leaves a binary under the name tests look for.
    local tmp="$TOOLS_BIN/.trillian-build"
    rm -rf "$tmp"
    GOBIN="$tmp" GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 \
      go install "github.com/google/trillian/cmd/trillian_log_server@$TRILLIAN_VERSION" \
        "github.com/google/trillian/cmd/trillian_log_signer@$TRILLIAN_VERSION" >&2
    mv "$tmp/trillian_log_server" "$server"
    mv "$tmp/trillian_log_signer" "$signer"
    rm -rf "$tmp"
  fi
  if [ ! -f "$schema" ]; then
    local mod
    # Outside any module, so no go.mod or go.sum is touched.
    mod="$(cd "$TOOLS_CACHE" && GO111MODULE=on go mod download -json "github.com/google/trillian@$TRILLIAN_VERSION" |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
    if [ -z "$mod" ] || [ ! -f "$mod/storage/postgresql/schema/storage.sql" ]; then
      echo "go mod download gave no PostgreSQL schema for github.com/google/trillian@$TRILLIAN_VERSION" >&2
      exit 1
    fi
    # The module cache's files are read-only; the copy is not.
    rm -f "$schema.tmp"
    cp "$mod/storage/postgresql/schema/storage.sql" "$schema.tmp"
    chmod 644 "$schema.tmp"
    mv "$schema.tmp" "$schema"
  fi
}

install_rekor() {
  local bin="$TOOLS_BIN/rekor-server-$REKOR_VERSION"
  if [ ! -x "$bin" ]; then
    echo "installing rekor-server $REKOR_VERSION into $TOOLS_BIN (go install; takes a few minutes once)" >&2
    local tmp="$TOOLS_BIN/.rekor-build"
    rm -rf "$tmp"
    GOBIN="$tmp" GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 \
      go install "github.com/sigstore/rekor/cmd/rekor-server@$REKOR_VERSION" >&2
    mv "$tmp/rekor-server" "$bin"
    rm -rf "$tmp"
  fi
}

# The release's provenance predicate is JSON built by jq from the job's
# environment (jq escapes what it is given); GitHub's runners carry it.
install_jq() {
  if command -v jq >/dev/null 2>&1; then
    return
  fi
  echo "installing jq from Debian" >&2
  if [ "$(id -u)" -eq 0 ]; then
    (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y jq) >&2
  else
    (sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y jq) >&2
  fi
}

install_act() {
  local bin="$TOOLS_BIN/act-$ACT_VERSION"
  if [ ! -x "$bin" ]; then
    echo "installing act $ACT_VERSION into $TOOLS_BIN (go install; takes a few minutes once)" >&2
    # Into a directory of its own and renamed when done, so an interrupted
    # build never leaves a binary under the name tests look for.
    local tmp="$TOOLS_BIN/.act-build"
    rm -rf "$tmp"
    GOBIN="$tmp" GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 \
      go install "github.com/nektos/act@$ACT_VERSION" >&2
    mv "$tmp/act" "$bin"
    rm -rf "$tmp"
  fi
  # An act already on PATH may be another version: the pinned one goes
  # first, under the plain name, in the tools bin.
  ln -sfn "act-$ACT_VERSION" "$TOOLS_BIN/act"
}

# The job container of the act tests is made from a static busybox, as no
# image can be pulled here: busybox-static from Debian, whose /bin/busybox
# runs in an empty image.
install_busybox() {
  if is_static /bin/busybox; then
    return
  fi
  echo "installing busybox-static from Debian" >&2
  if [ "$(id -u)" -eq 0 ]; then
    (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y busybox-static) >&2
  else
    (sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y busybox-static) >&2
  fi
}

# is_static reports whether a file is an ELF executable with no program
# interpreter, i.e. runs in an image that has no libc.
is_static() {
  [ -x "$1" ] || return 1
  # readelf is in binutils, which gcc (on every machine here) depends on.
  local headers
  headers="$(readelf -lW "$1" 2>/dev/null)" || return 1
  ! grep -q 'INTERP' <<<"$headers"
}

# The image's terraform is copied from the one on PATH into
# terraform-image/<version>/ in the cache, after checking that it is the
# pinned version and static (it runs in an image with no libc); make image
# takes it from there. Anything else fails here, with what to do, rather
# than ship a different Terraform.
install_terraform_image() {
  local dir="$TOOLS_CACHE/terraform-image/$TERRAFORM_IMAGE_VERSION"
  if [ -x "$dir/terraform" ]; then
    return
  fi
  local tf
  tf="$(command -v terraform || true)"
  if [ -z "$tf" ]; then
    echo "terraform-image: no terraform on PATH; the image carries HashiCorp's static terraform $TERRAFORM_IMAGE_VERSION: put it on PATH" >&2
    exit 1
  fi
  local got
  got="$("$tf" version -json 2>/dev/null | sed -n 's/^[[:space:]]*"terraform_version": "\(.*\)",$/\1/p')"
  if [ "$got" != "$TERRAFORM_IMAGE_VERSION" ]; then
    echo "terraform-image: $tf is terraform ${got:-of unknown version}; the image carries $TERRAFORM_IMAGE_VERSION: put HashiCorp's static build of it on PATH" >&2
    exit 1
  fi
  if ! is_static "$tf"; then
    echo "terraform-image: $tf is dynamically linked and would not run in the image (FROM scratch, no libc)" >&2
    exit 1
  fi
  mkdir -p "$dir"
  cp "$tf" "$dir/terraform.tmp"
  mv "$dir/terraform.tmp" "$dir/terraform"
}

# link_terraform_image names the pinned copy in the bin directory, where
# .ci/image-context.sh takes it from without knowing the version.
link_terraform_image() {
  ln -sfn "../terraform-image/$TERRAFORM_IMAGE_VERSION/terraform" "$TOOLS_BIN/terraform-image"
}

# The image's tofu is the tools cache's own build (static already): checked
# to be static, as the image has no libc, and named tofu-image in the bin
# directory, where .ci/image-context.sh takes it from.
install_opentofu_image() {
  install_opentofu
  local bin="$TOOLS_BIN/tofu-$OPENTOFU_VERSION"
  if ! is_static "$bin"; then
    echo "opentofu-image: $bin is dynamically linked and would not run in the image (FROM scratch, no libc)" >&2
    exit 1
  fi
  ln -sfn "tofu-$OPENTOFU_VERSION" "$TOOLS_BIN/tofu-image"
}

for tool in "$@"; do
  case "$tool" in
    terraform) install_terraform ;;
    cosign) install_cosign ;;
    gpg) install_gpg ;;
    conftest) install_conftest ;;
    gitea) install_gitea ;;
    act) install_act ;;
    busybox) install_busybox ;;
    terraform-image) install_terraform_image && link_terraform_image ;;
    postgres) install_postgres ;;
    chromium) install_chromium ;;
    opentofu) install_opentofu ;;
    opentofu-image) install_opentofu_image ;;
    fulcio) install_fulcio ;;
    registry) install_registry ;;
    trillian) install_trillian ;;
    rekor) install_rekor ;;
    jq) install_jq ;;
    *) echo "unknown tool: $tool" >&2; exit 2 ;;
  esac
done
echo "$TOOLS_BIN"
