# Nova's build. `make demo` and `make test` are the README's quick start.

GO        ?= go
BIN       := bin/nova
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
# Test tools (terraform, …) are built into a cache outside the repo by
# .ci/tools.sh; their bin directory goes first on PATH for every recipe.
TOOLS_BIN := $(or $(NOVA_TOOLS_BIN),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/nova-tools/bin)
export PATH := $(TOOLS_BIN):$(PATH)

.PHONY: build demo test check vet fmt bench docs workflows tools image clean

## build: static, as the image's binary is built (.ci/image-context.sh).
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./action

## demo: the main job on the embedded default: validate, plan and apply
## examples/hello in dev with real Terraform and local state.
demo: build
	@./.ci/tools.sh terraform >/dev/null
	./$(BIN) run --dir examples/hello

## test: formatting, vet and every test, with real Terraform, git, gpg,
## cosign, a real Gitea and a real PostgreSQL; then the packages that share state between
## goroutines once more under the race detector.
RACE_PKGS := ./runner ./runner/evidence/... ./stages/plan ./action

## Three fuzz targets run on every test run, each on input anyone can hand
## Nova: FuzzParse the contract loader (a contract file from the change
## under review), FuzzReadManifest the plan bundle's manifest (a bundle
## handed from the plan job to the apply job), FuzzEventFileName the
## evidence reader's parse of event file names (whoever can push to the
## evidence repo names them). Each runs a fixed number of inputs (about ten
## seconds' worth on a 2-core machine), not for a time: with -fuzztime
## <duration>, Go 1.26's fuzz coordinator can report its own deadline as
## the target's failure on a loaded machine (go.dev/issue/75804, fixed in
## Go 1.27). FUZZTIME overrides them all.
FUZZ_PARSE ?= 15000x
FUZZ_MANIFEST ?= 8000x
FUZZ_EVENT_NAME ?= 30000x
ifdef FUZZTIME
FUZZ_PARSE := $(FUZZTIME)
FUZZ_MANIFEST := $(FUZZTIME)
FUZZ_EVENT_NAME := $(FUZZTIME)
endif

test: tools check
	$(GO) test -count=1 -timeout 30m ./...
	$(GO) test -count=1 -race -timeout 30m $(RACE_PKGS)
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZ_PARSE) ./stages/schema
	$(GO) test -run '^$$' -fuzz '^FuzzReadManifest$$' -fuzztime $(FUZZ_MANIFEST) ./runner/bundle
	$(GO) test -run '^$$' -fuzz '^FuzzEventFileName$$' -fuzztime $(FUZZ_EVENT_NAME) ./runner/evidence/chain

check: fmt vet

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

## bench: the figures of docs/benchmarks.md, printed as its table (guard,
## figure, what it is compared with, command); figures, never assertions.
## Minutes on a 2-core machine; Docker must be running (the image). Each
## benchmark's own output stays in bin/bench.
bench: tools build image
	BIN=$(BIN) IMAGE=$(IMAGE) IMAGE_CONTEXT=$(IMAGE_CONTEXT) GO=$(GO) ./.ci/bench.sh

## image: the container action's image, FROM scratch, from a context of
## prebuilt static binaries and the CA bundle (.ci/image-context.sh): no
## registry is needed. IMAGE names it; the release workflow pushes it.
IMAGE         ?= ghcr.io/nova-platform/nova:$(VERSION)
IMAGE_CONTEXT := bin/image

image:
	@./.ci/tools.sh terraform-image opentofu-image >/dev/null
	VERSION=$(VERSION) ./.ci/image-context.sh $(IMAGE_CONTEXT)
	docker build $$(sed 's/^/--build-arg /' $(IMAGE_CONTEXT)/build-args) -t $(IMAGE) $(IMAGE_CONTEXT)

## docs: regenerate generated documentation: the reason codes, the export
## tables' schemas, and the sample report (from real runs of examples/hello).
docs:
	$(GO) test ./action -run TestActionMetadataIsGenerated -update
	$(GO) test ./runner -run TestReasonCodesDocIsCurrent -update
	$(GO) test ./runner/audit -run TestExportSchemasAreCurrent -update
	$(GO) test ./action -run TestReportSample -update

## workflows: render workflows-src/deploy.yml from templates/workflows, then
## copy workflows-src/ to .github/workflows and .gitea/workflows.
workflows:
	$(GO) test ./templates -run '^TestDeployWorkflowIsRendered$$' -update >/dev/null
	@for f in workflows-src/*.yml; do \
	  cp "$$f" .github/workflows/ && cp "$$f" .gitea/workflows/; \
	done

## tools: what the tests run for real: terraform and OpenTofu (tofu), gpg (git verify-commit),
## cosign (verify-blob), fulcio (the keyless tests' CA), trillian and rekor (their transparency log), registry and jq (the signed-release test), conftest (policy parity and benchmark), gitea
## (the Gitea adapter's server), the PostgreSQL server (the pg backend and
## the cross-runner lock; tests start their own through .ci/postgres.sh),
## chromium (opens the audit report), and for the container action's tests
## the image's terraform and tofu, act and a static busybox (act's job container).
## Tests never install anything themselves: a missing tool fails them.
tools:
	@./.ci/tools.sh terraform opentofu gpg cosign conftest gitea postgres chromium terraform-image opentofu-image act busybox fulcio registry trillian rekor jq >/dev/null

clean:
	rm -rf bin
