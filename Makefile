# hybrank build, fetch and test entry points.
#
#   make test    fetch prerequisites, vet, run all tests with -race (what CI runs)
#   make bench   fetch prerequisites and the peers, and run the main benchmark job
#
# Third-party artifacts are fetched from the npm registry and the Go module
# proxy, pinned by version and sha256, and extracted into .deps/ (git-ignored).

SHELL := /bin/bash
GO    ?= go
NPM   ?= npm
DEPS  := $(CURDIR)/.deps

# ONNX Runtime (CPU) from the onnxruntime-node npm package.
ORT_VERSION   := 1.29.0
ORT_TGZ       := onnxruntime-node-$(ORT_VERSION).tgz
ORT_SHA256    := cfdfb45ec4044b1fdca43e5d2e180fb6817e649ff8ad1e0dfc90e18e51b67037
ORT_DIR       := $(DEPS)/ort
ORT_LIB       := $(ORT_DIR)/libonnxruntime.so.1

# CUDA 13 execution providers built for ONNX Runtime 1.29.0.
ORT_GPU_PKG    := com.github.asus4.onnxruntime.linux-x64-gpu
ORT_GPU_VER    := 0.4.9
ORT_GPU_TGZ    := $(ORT_GPU_PKG)-$(ORT_GPU_VER).tgz
ORT_GPU_SHA256 := 2b459e0c17f340c92970c10ed86de4f37a3009f93c14053e6ad4334cbb6be412

# Hugging Face tokenizers (Rust, as a Node addon): the reference for parity tests.
HFTOK_VERSION := 0.23.2
HFTOK_TGZ     := tokenizers-$(HFTOK_VERSION).tgz
HFTOK_SHA256  := d5196036d6e7ef5934659618ef8f911080bf95f6ba6a2e42c243196a0ea50bc4
HFTOK_DIR     := $(DEPS)/node_modules/tokenizers

# Real vocabularies shipped inside Go modules (never committed).
VOCAB_MOD     := github.com/sugarme/tokenizer@v0.3.0
VOCAB_FILE    := pretrained/model/bert-base-uncased-vocab.txt
TOKJSON_MOD   := github.com/daulet/tokenizers@v1.24.0
TOKJSON_FILE  := test/data/all-minilm-l6-v2.json
ASSETS        := $(DEPS)/assets

DATASETS ?= $(abspath $(CURDIR)/../shared/datasets)

# Peers run side by side by cmd/bench (bm25s, faiss-cpu, ONNX Runtime's Python
# package with HF tokenizers): pinned with sha256 in bench/peers/requirements.txt.
PYTHON    ?= python3
PEERS_DIR := $(DEPS)/peers

export HYBRANK_ORT_LIB ?= $(ORT_LIB)
export HYBRANK_ASSETS  ?= $(ASSETS)
export HYBRANK_HF_TOKENIZERS ?= $(HFTOK_DIR)
export HYBRANK_DATASETS ?= $(DATASETS)
# Generated model directories (random weights, Hugging Face layout), one per profile.
export HYBRANK_MODELS ?= $(DEPS)/models
# Python packages of the peers (make peers); the bench drivers put it on PYTHONPATH.
export HYBRANK_PEERS ?= $(PEERS_DIR)

# Request decoders fuzzed briefly by `make test` (longer: make fuzz FUZZTIME=5m).
FUZZ_TARGETS := FuzzDecodeRerank FuzzDecodeEmbed FuzzDecodeOpenAIEmbed FuzzDecodeSearch FuzzDecodeDocuments FuzzDecodeTokenize
FUZZTIME ?= 10s

.PHONY: all prereqs deps peers runtime runtime-gpu assets hftokenizers build test test-short vet fmt-check fuzz bench bench-quick clean-deps

all: build

prereqs:
	@command -v $(GO)  >/dev/null || { echo "error: Go 1.26+ is required (https://go.dev/dl)"; exit 1; }
	@command -v gcc    >/dev/null || { echo "error: gcc is required for cgo (apt-get install gcc)"; exit 1; }
	@command -v $(NPM) >/dev/null || { echo "error: npm is required to fetch ONNX Runtime (apt-get install npm)"; exit 1; }
	@command -v node   >/dev/null || { echo "error: node is required for tokenizer parity tests (apt-get install nodejs)"; exit 1; }

# fetch_npm(tgz, spec, sha256): npm pack into .deps/npm and verify the checksum.
define fetch_npm
	@mkdir -p $(DEPS)/npm
	@if [ ! -f $(DEPS)/npm/$(1) ]; then echo "fetching $(2)"; (cd $(DEPS)/npm && $(NPM) pack --silent $(2) >/dev/null) || { echo "error: npm pack $(2) failed (is the npm registry reachable?)"; exit 1; }; fi
	@echo "$(3)  $(DEPS)/npm/$(1)" | sha256sum -c --quiet - || { echo "error: checksum mismatch for $(1); delete $(DEPS)/npm/$(1) and retry"; rm -f $(DEPS)/npm/$(1); exit 1; }
endef

runtime: $(ORT_LIB)
$(ORT_LIB):
	$(call fetch_npm,$(ORT_TGZ),onnxruntime-node@$(ORT_VERSION),$(ORT_SHA256))
	@mkdir -p $(ORT_DIR)
	@tar -xzf $(DEPS)/npm/$(ORT_TGZ) -C $(ORT_DIR) --strip-components=5 package/bin/napi-v6/linux/x64/libonnxruntime.so.1
	@echo "ONNX Runtime $(ORT_VERSION) -> $(ORT_LIB)"

runtime-gpu: $(ORT_LIB)
	$(call fetch_npm,$(ORT_GPU_TGZ),$(ORT_GPU_PKG)@$(ORT_GPU_VER),$(ORT_GPU_SHA256))
	@tar -xzf $(DEPS)/npm/$(ORT_GPU_TGZ) -C $(ORT_DIR) --wildcards --no-anchored --transform='s|.*/||' 'libonnxruntime_providers_cuda.so' 'libonnxruntime_providers_shared.so'
	@ls -1 $(ORT_DIR)

hftokenizers: $(HFTOK_DIR)/package.json
$(HFTOK_DIR)/package.json:
	$(call fetch_npm,$(HFTOK_TGZ),tokenizers@$(HFTOK_VERSION),$(HFTOK_SHA256))
	@mkdir -p $(HFTOK_DIR)
	@tar -xzf $(DEPS)/npm/$(HFTOK_TGZ) -C $(HFTOK_DIR) --strip-components=1 package/package.json package/index.js package/tokenizers.linux-x64-gnu.node
	@echo "HF tokenizers $(HFTOK_VERSION) -> $(HFTOK_DIR)"

assets: $(ASSETS)/bert-base-uncased-vocab.txt $(ASSETS)/all-minilm-l6-v2-tokenizer.json
$(ASSETS)/bert-base-uncased-vocab.txt:
	@mkdir -p $(ASSETS)
	@dir=$$($(GO) mod download -json $(VOCAB_MOD) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p'); \
	  test -n "$$dir" || { echo "error: go mod download $(VOCAB_MOD) failed"; exit 1; }; \
	  cp "$$dir/$(VOCAB_FILE)" $@ && chmod 644 $@
$(ASSETS)/all-minilm-l6-v2-tokenizer.json:
	@mkdir -p $(ASSETS)
	@dir=$$($(GO) mod download -json $(TOKJSON_MOD) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p'); \
	  test -n "$$dir" || { echo "error: go mod download $(TOKJSON_MOD) failed"; exit 1; }; \
	  cp "$$dir/$(TOKJSON_FILE)" $@ && chmod 644 $@

deps: prereqs runtime assets hftokenizers

# peers: not needed by make test. pip installs exactly the hashed wheels (no
# resolver, no other index) into a target folder, so no virtual environment
# or system package changes are involved.
peers: $(PEERS_DIR)/.installed
$(PEERS_DIR)/.installed: bench/peers/requirements.txt
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) is required for the peers (apt-get install python3 python3-pip)"; exit 1; }
	@rm -rf $(PEERS_DIR) && mkdir -p $(PEERS_DIR)
	$(PYTHON) -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --require-hashes --only-binary=:all: \
	  --target $(PEERS_DIR) -r bench/peers/requirements.txt
	@PYTHONPATH=$(PEERS_DIR) $(PYTHON) -c 'import bm25s, Stemmer, faiss, onnxruntime, tokenizers; print("peers: bm25s", bm25s.__version__, "faiss", faiss.__version__, "onnxruntime", onnxruntime.__version__, "tokenizers", tokenizers.__version__)'
	@touch $@

build: prereqs
	$(GO) build -o bin/ ./cmd/...

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

test: deps fmt-check vet
	$(GO) test -race -count=1 -timeout 40m ./...
	$(MAKE) --no-print-directory fuzz

fuzz:
	@for f in $(FUZZ_TARGETS); do \
	  echo "fuzz $$f ($(FUZZTIME))"; \
	  $(GO) test ./server -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) >/tmp/hybrank-fuzz.log 2>&1 || { cat /tmp/hybrank-fuzz.log; exit 1; }; \
	done

test-short: deps
	$(GO) test -short -count=1 ./...

# The peers (make peers) run beside hybrank in bench lexical, dense and rerank.
bench: deps build peers
	./bin/bench all --datasets $(DATASETS) --out bench/results --models $(HYBRANK_MODELS)

bench-quick: deps build peers
	./bin/bench all --quick --datasets $(DATASETS) --out bench/results --models $(HYBRANK_MODELS)

clean-deps:
	rm -rf $(DEPS)
