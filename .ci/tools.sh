#!/usr/bin/env bash
# Installs the programs Nova's tests run for real, built from the Go module
# proxy into a cache outside the repository (never committed). Prints the
# bin directory to put on PATH.
#
#   .ci/tools.sh terraform   # terraform, unless one is already on PATH
set -euo pipefail

TOOLS_BIN="${NOVA_TOOLS_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/nova-tools/bin}"
mkdir -p "$TOOLS_BIN"
export PATH="$TOOLS_BIN:$PATH"

# Exact versions: the module proxy refuses @latest for some modules, and a
# test run must not change because a new release appeared.
TERRAFORM_VERSION=v1.5.7

install_terraform() {
  if command -v terraform >/dev/null 2>&1; then
    return
  fi
  echo "installing terraform $TERRAFORM_VERSION into $TOOLS_BIN (go install; takes a few minutes once)" >&2
  GOBIN="$TOOLS_BIN" GOFLAGS=-mod=mod go install "github.com/hashicorp/terraform@$TERRAFORM_VERSION" >&2
}

for tool in "$@"; do
  case "$tool" in
    terraform) install_terraform ;;
    *) echo "unknown tool: $tool" >&2; exit 2 ;;
  esac
done
echo "$TOOLS_BIN"
