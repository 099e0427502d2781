# Ambit — build, test and demo. Tools are installed at pinned versions into
# .tools/bin; nothing needs installing by hand.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --warn-undefined-variables --no-builtin-rules

TOOLS := $(CURDIR)/.tools/bin
BIN := $(CURDIR)/bin
BUF_VERSION := v1.75.0
PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
STATICCHECK_MODULE_VERSION := v0.8.2
# OPA is a baseline make bench measures against, never a dependency.
OPA_VERSION := v1.22.3

# Every module of the workspace; `go test ./...` does not cross go.work
# module boundaries.
MODULES = $(shell go list -m -f '{{.Dir}}')
PACKAGES = $(addsuffix /...,$(MODULES))
# The version --version prints; the build information supplies the rest.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/ambitkernel/ambit/sdk/version.Version=$(VERSION)
# make chaos runs this many refund loops (and a quarter as many
# support-desk loops) from this seed.
CHAOS_LOOPS ?= 1000
CHAOS_SEED ?= 1
BINARIES := ambit-kernel ambit-evidence ambit-action ambit-verifier ambit-mcp ambitctl ambit-demo supportdesk-mcp refund-data

# The clients. Only Debian's /usr/bin/python3 has Debian's Python packages.
# PROTOC_VERSION is the protoc the committed Python was generated with.
PYTHON := /usr/bin/python3
PYTHON_MODULES := grpc, google.protobuf, cryptography, yaml, pytest
DEBIAN_PACKAGES := protobuf-compiler protobuf-compiler-grpc python3-grpcio python3-grpc-tools \
	python3-protobuf python3-cryptography python3-yaml python3-pytest
PROTOC_VERSION := 3.21.12
POSTGRES_BIN := /usr/lib/postgresql/15/bin
TS_CLIENT := clients/typescript
TS_DEPS := $(TS_CLIENT)/node_modules/.installed
GENERATED := proto/gen clients/python/ambit_client/gen $(TS_CLIENT)/src/gen

.PHONY: help
help: ## Describe the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: demo
demo: build ## Run the expense-refund and support-desk stories end to end on loopback
	$(BIN)/ambit-demo --bin $(BIN)

.PHONY: test
test: test-go test-clients ## Run every test: Go, then the Python and TypeScript clients

.PHONY: test-go
test-go: postgres ## Run every module's tests with the race detector, beside a throwaway PostgreSQL; the kernel's store and core once more on PostgreSQL
	scripts/with-postgres env RAPID_CHECKS=1000 go test -race -count=1 -timeout 15m $(PACKAGES)
	scripts/with-postgres env AMBIT_TEST_STORE=postgres go test -race -count=1 -timeout 15m $(CURDIR)/kernel/store/... $(CURDIR)/kernel/authority/...

.PHONY: postgres
postgres: ## Install Debian's PostgreSQL 15 when missing (the tests start their own throwaway server)
	@test -x $(POSTGRES_BIN)/initdb || $(MAKE) --no-print-directory debian-packages DEBIAN_PACKAGES=postgresql-15

.PHONY: test-clients
test-clients: build python-deps $(TS_DEPS) ## Run the Python and TypeScript clients' tests against a live stack
	cd clients/python && $(PYTHON) -m pytest -q
	cd $(TS_CLIENT) && node_modules/.bin/tsc && node --test dist/test/*.test.js

.PHONY: chaos
chaos: ## Crash test: 1,000 refund and 250 support-desk loops under SIGKILLs at random times and at every failpoint, then the audit; at durability full, then normal
	AMBIT_CHAOS_LOOPS=$(CHAOS_LOOPS) AMBIT_CHAOS_SEED=$(CHAOS_SEED) AMBIT_CHAOS_DURABILITY=full go test -count=1 -run '^TestChaos$$' -timeout 3h -v ./e2e/
	AMBIT_CHAOS_LOOPS=$(CHAOS_LOOPS) AMBIT_CHAOS_SEED=$(CHAOS_SEED) AMBIT_CHAOS_DURABILITY=normal go test -count=1 -run '^TestChaos$$' -timeout 3h -v ./e2e/

.PHONY: replicas
replicas: build postgres ## Two kernel replicas on one PostgreSQL behind the sidecars, one killed under load; print the figures
	scripts/with-postgres env AMBIT_REPLICA_FIGURES=1 go test -count=1 -run '^TestKernelReplicas$$' -v -timeout 10m ./e2e/

.PHONY: attack
attack: ## Run the attack harness against the four processes (every family, both examples, three rounds) and print its table
	AMBIT_ATTACK=1 go test -count=1 -run '^TestAttack$$' -v -timeout 20m ./e2e/

.PHONY: bench
bench: $(TOOLS)/opa ## Print evaluator, identifier, signing, scale (10 to 10^6 tasks), networked and OPA benchmarks beside their baselines, where each process's CPU goes, the kernel's system calls, and what pacing its garbage collector saves
	go test -run '^$$' -bench . -benchmem -count 1 ./kernel/evaluate/
	go test -run '^$$' -bench Bool -benchmem -count 1 ./sdk/expr/
	go test -run '^$$' -bench 'Submit|ItemsAt' -benchmem -count 1 ./kernel/authority/
	go test -run '^$$' -bench 'EvidenceIDs|CommitPages|DecisionCommit|Watched' -benchmem -count 1 ./kernel/store/
	go test -run '^$$' -bench 'Sign' -benchmem -count 1 ./sdk/envelope/
	AMBIT_BENCH_SCALE=1 go test -run '^$$' -bench 'Scale' -count 1 -timeout 90m ./kernel/authority/
	AMBIT_BENCH=1 AMBIT_BENCH_ROUNDS=3 AMBIT_BENCH_OPA=$(TOOLS)/opa go test -run '^$$' -bench 'Networked' -count 1 -timeout 30m ./e2e/
	@command -v strace >/dev/null || $(MAKE) --no-print-directory debian-packages DEBIAN_PACKAGES=strace
	AMBIT_BENCH=1 go test -run '^$$' -bench 'KernelCPU' -count 1 -timeout 10m ./e2e/
	AMBIT_BENCH=1 AMBIT_BENCH_ROUNDS=3 go test -run '^$$' -bench 'GCPacing' -count 1 -timeout 10m ./e2e/

.PHONY: build
build: ## Build the binaries, and the programs the examples run, into bin/
	@mkdir -p $(BIN)
	go build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./kernel/cmd/ambit-kernel ./kernel/cmd/ambitctl \
		./adapters/cmd/ambit-evidence ./adapters/cmd/ambit-action ./adapters/cmd/ambit-mcp \
		./verifier/cmd/ambit-verifier ./examples/cmd/ambit-demo \
		./examples/supportdesk/cmd/supportdesk-mcp ./examples/expense-refund/cmd/refund-data

.PHONY: fuzz
fuzz: ## Fuzz contract loading and evaluation for a minute
	go test -run '^$$' -fuzz FuzzLoadAndEvaluate -fuzztime 60s ./kernel/contract/

.PHONY: generate
generate: $(TOOLS)/buf $(TOOLS)/protoc-gen-go $(TOOLS)/protoc-gen-go-grpc protoc $(TS_DEPS) ## Regenerate Go, Python and TypeScript from proto/
	$(TOOLS)/buf generate

.PHONY: checkgenerate
checkgenerate: generate ## Fail when committed generated code is stale
	@if [ -n "$$(git status --porcelain -- $(GENERATED))" ]; then \
		git status --porcelain -- $(GENERATED); \
		echo "generated code is stale: run make generate and commit"; exit 1; fi

.PHONY: python-deps
python-deps: ## Install Debian's Python packages for the Python client when missing
	@$(PYTHON) -c 'import $(PYTHON_MODULES)' 2>/dev/null || $(MAKE) --no-print-directory debian-packages

.PHONY: protoc
protoc: ## Install protoc and grpc_python_plugin from Debian when missing; check protoc's version
	@command -v protoc >/dev/null && command -v grpc_python_plugin >/dev/null || $(MAKE) --no-print-directory debian-packages
	@protoc --version | grep -qx 'libprotoc $(PROTOC_VERSION)' || \
		{ echo "protoc $(PROTOC_VERSION) is needed (the committed Python was generated with it); found: $$(protoc --version)"; exit 1; }

.PHONY: debian-packages
debian-packages:
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEBIAN_PACKAGES)

# npm ci installs exactly the lockfile's versions; the stamp is newer than
# both package files once it has run.
$(TS_DEPS): $(TS_CLIENT)/package.json $(TS_CLIENT)/package-lock.json
	cd $(TS_CLIENT) && npm ci --no-audit --no-fund
	touch $@

.PHONY: lint
lint: $(TOOLS)/buf $(TOOLS)/staticcheck ## buf lint and format check, go vet, staticcheck, tidy go.mod files
	$(TOOLS)/buf lint
	$(TOOLS)/buf format -d --exit-code
	go vet $(PACKAGES)
	$(TOOLS)/staticcheck $(PACKAGES)
	@# Each module must build on its own too (go install, a vendored copy),
	@# not only inside the workspace.
	for m in $(MODULES); do (cd $$m && GOWORK=off go mod tidy -diff) || { echo "$$m: go.mod is not tidy (cd $$m && GOWORK=off go mod tidy)"; exit 1; }; done

.PHONY: breaking
breaking: $(TOOLS)/buf ## Check proto/ for breaking changes against the previous commit
	$(TOOLS)/buf breaking --against '.git#ref=HEAD~1'

.PHONY: tools
tools: $(TOOLS)/buf $(TOOLS)/protoc-gen-go $(TOOLS)/protoc-gen-go-grpc $(TOOLS)/staticcheck ## Install pinned tools

$(TOOLS)/buf:
	GOBIN=$(TOOLS) go install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
$(TOOLS)/protoc-gen-go:
	GOBIN=$(TOOLS) go install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
$(TOOLS)/protoc-gen-go-grpc:
	GOBIN=$(TOOLS) go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
$(TOOLS)/staticcheck:
	GOBIN=$(TOOLS) go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_MODULE_VERSION)
$(TOOLS)/opa:
	GOBIN=$(TOOLS) go install github.com/open-policy-agent/opa@$(OPA_VERSION)

.PHONY: clean
clean: ## Remove build outputs
	rm -rf $(BIN)
