#!/usr/bin/env bash
# Signs what Nova's release publishes, keylessly: cosign asks the job's
# OIDC token (GitHub's ambient provider, `id-token: write`), Fulcio turns
# it into a short-lived certificate naming the release workflow at the
# tag's ref, and nothing long-lived is stored anywhere. The release
# workflow (workflows-src/release.yml) runs these commands and the
# signed-release test (action/imagetest/release_test.go) runs the
# workflow's own lines against a loopback registry and Fulcio, so what is
# tested is what releases.
#
#   .ci/release-sign.sh blobs DIR       # DIR/<file>.sigstore.json beside each file of DIR, and
#                                       # DIR/SHA256SUMS.intoto.sigstore.json: their SLSA provenance
#   .ci/release-sign.sh image NAME:TAG  # push the local image, sign it by digest and
#                                       # attest its SLSA provenance; prints NAME@sha256:…
#
# COSIGN is the cosign v2 CLI (default: cosign on PATH). SIGSTORE_FLAGS,
# unset in the release, adds cosign flags for a private Sigstore
# deployment (the test's: --fulcio-url, --tlog-upload=false, …).
#
# The provenance is built from GitHub's default environment
# (GITHUB_SERVER_URL, GITHUB_REPOSITORY, GITHUB_REF, GITHUB_SHA,
# GITHUB_WORKFLOW_REF, GITHUB_RUN_ID, …): a variable missing is an error,
# never a field left empty.
set -euo pipefail

COSIGN="${COSIGN:-cosign}"
read -r -a sigstore_flags <<<"${SIGSTORE_FLAGS:-}"

usage() {
  echo "usage: .ci/release-sign.sh blobs DIR | image NAME:TAG" >&2
  exit 2
}

# sign_blobs leaves a bundle (signature and certificate) beside each file:
# `cosign verify-blob --bundle FILE.sigstore.json FILE` checks it.
sign_blobs() {
  local dir="$1" f
  local signed=0
  for f in "$dir"/*; do
    case "$f" in *.sigstore.json) continue ;; esac
    [ -f "$f" ] || continue
    "$COSIGN" sign-blob --yes "${sigstore_flags[@]}" --bundle "$f.sigstore.json" "$f" >/dev/null
    signed=$((signed + 1))
  done
  if [ "$signed" -eq 0 ]; then
    echo "release-sign: nothing to sign in $dir" >&2
    exit 1
  fi
  # The binaries' provenance, through the checksums that name them all:
  # `cosign verify-blob-attestation --bundle SHA256SUMS.intoto.sigstore.json`.
  if [ ! -f "$dir/SHA256SUMS" ]; then
    echo "release-sign: no SHA256SUMS in $dir to attest the binaries' provenance through" >&2
    exit 1
  fi
  predicate="$(mktemp)"
  trap 'rm -f "$predicate"' EXIT
  provenance >"$predicate"
  "$COSIGN" attest-blob --yes "${sigstore_flags[@]}" --type slsaprovenance1 --predicate "$predicate" \
    --bundle "$dir/SHA256SUMS.intoto.sigstore.json" "$dir/SHA256SUMS" >/dev/null
}

# provenance prints an SLSA v1 provenance predicate for this run, with the
# build type GitHub's own attestations use: the workflow, the ref and
# commit it built, and the run that did it. jq builds the JSON, escaping
# what the environment holds.
provenance() {
  jq -n \
    --arg server "${GITHUB_SERVER_URL:?}" \
    --arg repository "${GITHUB_REPOSITORY:?}" \
    --arg repository_id "${GITHUB_REPOSITORY_ID:?}" \
    --arg owner_id "${GITHUB_REPOSITORY_OWNER_ID:?}" \
    --arg ref "${GITHUB_REF:?}" \
    --arg sha "${GITHUB_SHA:?}" \
    --arg workflow_ref "${GITHUB_WORKFLOW_REF:?}" \
    --arg event "${GITHUB_EVENT_NAME:?}" \
    --arg runner "${RUNNER_ENVIRONMENT:?}" \
    --arg run_id "${GITHUB_RUN_ID:?}" \
    --arg attempt "${GITHUB_RUN_ATTEMPT:?}" \
    '{
      buildDefinition: {
        buildType: "https://actions.github.io/buildtypes/workflow/v1",
        externalParameters: {workflow: {
          ref: $ref,
          repository: ($server + "/" + $repository),
          path: ($workflow_ref | sub("@.*$"; "") | ltrimstr($repository + "/"))
        }},
        internalParameters: {github: {
          event_name: $event,
          repository_id: $repository_id,
          repository_owner_id: $owner_id,
          runner_environment: $runner
        }},
        resolvedDependencies: [{
          uri: ("git+" + $server + "/" + $repository + "@" + $ref),
          digest: {gitCommit: $sha}
        }]
      },
      runDetails: {
        builder: {id: ($server + "/" + $workflow_ref)},
        metadata: {invocationId: ($server + "/" + $repository + "/actions/runs/" + $run_id + "/attempts/" + $attempt)}
      }
    }'
}

# sign_image pushes NAME:TAG and signs what the registry now holds, by
# digest: a tag can be moved, the signed content cannot.
sign_image() {
  local ref="$1"
  local name="${ref%:*}"
  if [ "$name" = "$ref" ] || [[ "$ref" == *@* ]] || [[ "${ref##*:}" == */* ]]; then
    echo "release-sign: $ref is not NAME:TAG" >&2
    exit 2
  fi
  # Before anything is published, so a missing variable publishes nothing.
  predicate="$(mktemp)"
  trap 'rm -f "$predicate"' EXIT
  provenance >"$predicate"
  docker push --quiet "$ref" >&2
  local digest
  digest="$(docker image inspect --format '{{range .RepoDigests}}{{println .}}{{end}}' "$ref" |
    awk -v want="$name@sha256:" 'index($0, want) == 1 { print; exit }')"
  if [ -z "$digest" ]; then
    echo "release-sign: docker reports no digest of $ref in $name after the push" >&2
    exit 1
  fi
  "$COSIGN" sign --yes "${sigstore_flags[@]}" "$digest" >&2
  "$COSIGN" attest --yes "${sigstore_flags[@]}" --type slsaprovenance1 --predicate "$predicate" "$digest" >&2
  printf '%s\n' "$digest"
}

[ $# -eq 2 ] || usage
case "$1" in
  blobs) sign_blobs "$2" ;;
  image) sign_image "$2" ;;
  *) usage ;;
esac
