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

# Every module of the workspace; `go test ./...` does not cross go.work
# module boundaries.
MODULES = $(shell go list -m -f '{{.Dir}}')
PACKAGES = $(addsuffix /...,$(MODULES))
# The version --version prints; the build information supplies the rest.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/ambitkernel/ambit/sdk/version.Version=$(VERSION)
BINARIES := ambit-kernel ambit-evidence ambit-action ambit-verifier ambitctl ambit-demo supportdesk-mcp

.PHONY: help
help: ## Describe the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: demo
demo: build ## Run the expense-refund story end to end on SQLite and loopback
	$(BIN)/ambit-demo --bin $(BIN)

.PHONY: test
test: ## Run every module's tests with the race detector
	RAPID_CHECKS=1000 go test -race -count=1 -timeout 15m $(PACKAGES)

.PHONY: bench
bench: ## Print evaluator and networked benchmarks beside their baselines
	go test -run '^$$' -bench . -benchmem -count 1 ./kernel/evaluate/ ./kernel/authority/
	AMBIT_BENCH=1 go test -run '^$$' -bench . -benchmem -count 1 -timeout 20m ./e2e/
	AMBIT_BENCH=1 AMBIT_BENCH_DURABILITY=normal go test -run '^$$' -bench . -count 1 -timeout 20m ./e2e/ | grep -A12 'networked figures' 

.PHONY: build
build: ## Build the binaries into bin/
	@mkdir -p $(BIN)
	go build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./kernel/cmd/ambit-kernel ./kernel/cmd/ambitctl \
		./adapters/cmd/ambit-evidence ./adapters/cmd/ambit-action \
		./verifier/cmd/ambit-verifier ./e2e/cmd/ambit-demo \
		./examples/supportdesk/cmd/supportdesk-mcp

.PHONY: fuzz
fuzz: ## Fuzz contract loading and evaluation for a minute
	go test -run '^$$' -fuzz FuzzLoadAndEvaluate -fuzztime 60s ./kernel/contract/

.PHONY: generate
generate: $(TOOLS)/buf $(TOOLS)/protoc-gen-go $(TOOLS)/protoc-gen-go-grpc ## Regenerate Go from proto/
	$(TOOLS)/buf generate

.PHONY: checkgenerate
checkgenerate: generate ## Fail when committed generated code is stale
	@if [ -n "$$(git status --porcelain -- proto/gen)" ]; then \
		git status --porcelain -- proto/gen; \
		echo "generated code is stale: run make generate and commit"; exit 1; fi

.PHONY: lint
lint: $(TOOLS)/buf $(TOOLS)/staticcheck ## buf lint and format check, go vet, staticcheck
	$(TOOLS)/buf lint
	$(TOOLS)/buf format -d --exit-code
	go vet $(PACKAGES)
	$(TOOLS)/staticcheck $(PACKAGES)

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

.PHONY: clean
clean: ## Remove build outputs
	rm -rf $(BIN)
