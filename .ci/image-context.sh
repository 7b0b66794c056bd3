#!/usr/bin/env bash
# Prepares the build context of the container action's image in DIR:
# everything action/Dockerfile copies, built or taken from this machine,
# because the image is FROM scratch and no builder image can be pulled.
# `make image`, the release workflow and the image tests all build the
# image from a context made by this script, so they build the same thing.
#
#   .ci/image-context.sh DIR     # then: docker build DIR
#
# It builds nova and copies the rest; it installs nothing. The pinned
# static terraform and tofu come from the tools cache (`.ci/tools.sh
# terraform-image opentofu-image`, part of `make tools`) and the CA bundle
# from the machine's ca-certificates.
#
# VERSION (default: git describe) is stamped into nova and the image.
set -euo pipefail
cd "$(dirname "$0")/.."

out="${1:?usage: .ci/image-context.sh DIR}"
GO="${GO:-go}"
VERSION="${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
TOOLS_BIN="${NOVA_TOOLS_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/nova-tools/bin}"
terraform="$TOOLS_BIN/terraform-image"
tofu="$TOOLS_BIN/tofu-image"
ca_bundle=/etc/ssl/certs/ca-certificates.crt

if [ ! -x "$terraform" ]; then
  echo "image-context: no $terraform: run \`make tools\` (.ci/tools.sh terraform-image)" >&2
  exit 1
fi
if [ ! -x "$tofu" ]; then
  echo "image-context: no $tofu: run \`make tools\` (.ci/tools.sh opentofu-image)" >&2
  exit 1
fi
if [ ! -s "$ca_bundle" ]; then
  echo "image-context: no CA bundle at $ca_bundle: install Debian's ca-certificates" >&2
  exit 1
fi
tf_version="$("$terraform" version -json | sed -n 's/^[[:space:]]*"terraform_version": "\(.*\)",$/\1/p')"
# OpenTofu answers in Terraform's format; an empty CLI config keeps a
# warning about a missing one off stdout.
tofu_version="$(TF_CLI_CONFIG_FILE=/dev/null "$tofu" version -json | sed -n 's/^[[:space:]]*"terraform_version": "\(.*\)",$/\1/p')"

# A fresh directory each time, so nothing from an earlier build (another
# version's binary, a stray file) ends up in the image.
rm -rf "$out"
mkdir -p "$out/rootfs"

# Static, so it runs with no libc; -trimpath, so the binary holds no path
# of the machine that built it (and two machines build the same bytes).
CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-s -w -X main.version=$VERSION" -o "$out/nova" ./action
cp "$terraform" "$out/terraform"
cp "$tofu" "$out/tofu"
cp "$ca_bundle" "$out/ca-certificates.crt"
cp action/Dockerfile "$out/Dockerfile"

# The few files of a root filesystem nova and terraform read (see
# action/Dockerfile), with modes set here rather than left to the umask of
# whoever checked the repository out.
cp -R action/rootfs/. "$out/rootfs/"
find "$out/rootfs" -type d -exec chmod 0755 {} +
find "$out/rootfs" -type f -exec chmod 0644 {} +
# Go's os.TempDir and terraform write here; sticky and world-writable as on
# any system, for a workflow that runs the image under another user.
mkdir -m 1777 "$out/rootfs/tmp"
mkdir -m 0700 "$out/rootfs/root"

printf 'VERSION=%s\nTERRAFORM_VERSION=%s\nOPENTOFU_VERSION=%s\n' "$VERSION" "$tf_version" "$tofu_version" >"$out/build-args"
