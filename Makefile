# ops-server — every target covers every module of the workspace.
# `make help` lists the targets.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

ROOT       := $(CURDIR)
BIN        := $(ROOT)/bin
# Module directories of the workspace (go.work), in dependency order.
MODULES    := operator/api operator apiserver e2e
# Go packages of every module, as patterns relative to the root.
PKGS       := $(addsuffix /...,$(addprefix ./,$(MODULES)))
GO_TEST    ?= go test
TEST_FLAGS ?= -count=1 -timeout=30m
# The version and git revision ops_build_info, --version and GET /version
# report (make build VERSION=v1.2.3): by default from git.
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION   ?= $(shell git rev-parse HEAD 2>/dev/null)

# Where tests and the local stack find the tool binaries (and where `make
# tools` links them): the environment wins, e.g. OPS_BIN_DIR=/opt/ops-tools.
OPS_BIN_DIR ?= $(BIN)
ifeq ($(strip $(OPS_BIN_DIR)),)
OPS_BIN_DIR := $(BIN)
endif
export OPS_BIN_DIR

# The tools each target needs (hack/tools/build.sh builds only those; the
# e2e suite and the local stack need every tool).
TOOLS_GENERATE    := controller-gen oapi-codegen
TOOLS_INTEGRATION := etcd kube-apiserver kubectl source-controller helm-controller vmstorage vminsert vmselect vmbackup vmrestore
# Packages of each test group (hack/test-groups.txt).
UNIT_PKGS         = $(shell hack/test-groups.sh packages unit)
INTEGRATION_PKGS  = $(shell hack/test-groups.sh packages integration)
E2E_PKGS          = $(shell hack/test-groups.sh packages e2e)

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  %-16s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Tools

.PHONY: tools
tools: ## Build the pinned tool binaries (kube-apiserver, etcd, Flux, controller-gen, ...) into bin/, cached per user; the last line times each.
	hack/tools/build.sh

.PHONY: tools-integration
tools-integration: ## Only the tools the integration tests run (etcd, kube-apiserver, kubectl, Flux, VictoriaMetrics).
	hack/tools/build.sh $(TOOLS_INTEGRATION)

# The browser of the API reference page's test (apiserver/test/docspage):
# Debian's chromium, installed when missing and make runs as root;
# OPS_CHROMIUM names another Chromium or Chrome binary.
.PHONY: chromium
chromium: ## Install Debian's chromium when missing (as root), for the /docs page's browser test.
	@if [ -n "$${OPS_CHROMIUM:-}" ]; then command -v "$$OPS_CHROMIUM" >/dev/null || { echo "OPS_CHROMIUM=$$OPS_CHROMIUM is not an executable"; exit 1; }; exit 0; fi; \
	if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "Installing Debian's chromium (the /docs page's browser test)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else \
		echo "The /docs page's browser test (apiserver/test/docspage) needs Chromium: run 'sudo apt-get install chromium'" \
			"(Debian/Ubuntu), or set OPS_CHROMIUM to a Chromium or Chrome binary."; exit 1; \
	fi

##@ Development

.PHONY: generate
generate: ## Generate deepcopy code for the API types and the Go client of the REST API (apiserver/pkg/client, from docs/openapi.yaml).
	hack/tools/build.sh $(TOOLS_GENERATE)
	cd operator/api && $(OPS_BIN_DIR)/controller-gen object:headerFile=$(ROOT)/hack/boilerplate.go.txt paths=./...
	cd apiserver/pkg/client && $(OPS_BIN_DIR)/oapi-codegen -config oapi-codegen.yaml $(ROOT)/docs/openapi.yaml

.PHONY: manifests
manifests: ## Generate the CRDs into crds/ (ours and the Flux kinds we use), the chart's CRDs and the kustomize base.
	hack/tools/build.sh $(TOOLS_GENERATE)
	hack/manifests.sh
	hack/render-kustomize.sh

.PHONY: fmt
fmt: ## gofmt every module.
	gofmt -w $(MODULES)

.PHONY: lint
lint: ## gofmt (check only) and go vet on every module.
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet $(PKGS)

.PHONY: verify
verify: generate manifests ## Fail when generated files are stale or go.mod files are untidy.
	@git add -N crds operator/api apiserver/pkg/client deploy/charts/ops-server/crds deploy/charts/vm-operator/crds deploy/kustomize/base >/dev/null 2>&1 || true
	@if ! git diff --quiet -- crds operator/api apiserver/pkg/client deploy/charts/ops-server/crds deploy/charts/vm-operator/crds deploy/kustomize/base; then \
		echo "Generated files are stale; run 'make generate manifests' and commit:"; \
		git diff --stat -- crds operator/api apiserver/pkg/client deploy/charts/ops-server/crds deploy/charts/vm-operator/crds deploy/kustomize/base; exit 1; fi
	@for m in $(MODULES); do (cd $$m && go mod tidy -diff >/dev/null) || { echo "go.mod of $$m is not tidy: run 'cd $$m && go mod tidy'"; exit 1; }; done

.PHONY: build
build: ## Build the ops-apiserver, ops-operator and opsctl binaries into bin/.
	go build -ldflags "-X github.com/tidbcloud/ops-server/operator/pkg/buildinfo.Version=$(VERSION) -X github.com/tidbcloud/ops-server/operator/pkg/buildinfo.Revision=$(REVISION)" -o $(OPS_BIN_DIR)/ ./apiserver/cmd/... ./operator/cmd/...

.PHONY: dev
dev: tools build ## Run the whole stack locally on 127.0.0.1 (OPS_REPLICAS=2: HA mode; see README).
	go build -o $(OPS_BIN_DIR)/ ./e2e/cmd/ops-dev
	$(OPS_BIN_DIR)/ops-dev --state-dir $(ROOT)/.dev

.PHONY: dev-clean
dev-clean: ## Forget the local stack's state.
	rm -rf .dev

##@ Test

.PHONY: test
test: tools chromium lint verify test-groups ## Everything CI runs: lint, verify, then every test of every module (unit, integration on a real control plane with real Flux, e2e).
	$(GO_TEST) $(TEST_FLAGS) $(PKGS)

.PHONY: test-groups
test-groups: ## Check that every package with tests is in one test group (hack/test-groups.txt).
	hack/test-groups.sh check

.PHONY: test-unit
test-unit: test-groups ## Only the tests that need no tool binary and no control plane (builds no tool).
	$(GO_TEST) $(TEST_FLAGS) $(UNIT_PKGS)

.PHONY: test-integration
test-integration: tools-integration chromium test-groups ## Only the tests on a real control plane (etcd, kube-apiserver, Flux); builds only their tools.
	$(GO_TEST) $(TEST_FLAGS) $(INTEGRATION_PKGS)

.PHONY: test-e2e
test-e2e: tools ## Only the e2e suite (the whole local stack, driven through the REST API).
	$(GO_TEST) $(TEST_FLAGS) $(E2E_PKGS)

# BENCH_FLAGS are passed to ops-bench, e.g. BENCH_FLAGS='-running=20 -scale= -repeats=1 -operator-ops=50'
# for a quicker run (go run ./e2e/cmd/ops-bench -h lists the sizes). Profiles go to bin/bench-profiles.
BENCH_FLAGS ?=

.PHONY: bench
bench: tools build ## Benchmarks on a fresh local stack, ops-server next to Kubernetes and Flux alone; writes docs/benchmarks.md and docs/benchmarks.json, profiles into bin/bench-profiles (measure, never assert timings).
	go build -o $(BIN)/ ./e2e/cmd/ops-bench
	$(BIN)/ops-bench $(BENCH_FLAGS)
