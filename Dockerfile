# vkllm's container images. docker build targets:
#
#   docker build -t vkllm:cpu .                      # the default: static, CPU only
#   docker build -t vkllm:vulkan --target vulkan .   # cgo + the Vulkan loader, for GPUs
#
# Both run as a non-root user (65532) and write nothing outside /tmp and
# the model folder, so they run with a read-only root filesystem. The
# model is mounted at /models, or fetched there first by `vkllm pull`
# (see deploy/helm/vkllm). deploy/dockerfile_test.go runs the go build
# lines of the build stages below: keep each on one RUN line.

ARG GO_VERSION=1.26

# build: the static CPU binary (pure Go: no C library, no loader).
FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/vkllm ./cmd/vkllm
# models: an empty /models owned by the runtime user, so a fresh volume
# mounted there is writable by vkllm pull.
RUN mkdir -p /out/models

# build-vulkan: the same command with cgo, so the Vulkan backend is in;
# it dlopens libvulkan.so.1 at run time and links only libc.
FROM build AS build-vulkan
RUN CGO_ENABLED=1 go build -trimpath -ldflags="-s -w" -o /out/vkllm ./cmd/vkllm

# vulkan: Debian slim with the Vulkan loader and Mesa's drivers (AMD,
# Intel, lavapipe). On NVIDIA the container toolkit mounts the driver's
# ICD when NVIDIA_DRIVER_CAPABILITIES includes graphics.
FROM debian:bookworm-slim AS vulkan
RUN apt-get update \
 && apt-get install -y --no-install-recommends libvulkan1 mesa-vulkan-drivers ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build-vulkan /out/vkllm /usr/local/bin/vkllm
COPY --from=build --chown=65532:65532 /out/models /models
ENV XDG_CACHE_HOME=/tmp/cache \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/vkllm"]
CMD ["serve", "--addr", "0.0.0.0:8080", "--backend", "vulkan", "--model", "smollm2=/models/SmolLM2-135M-Instruct.Q4_1.gguf"]

# cpu (the last stage, so the default): distroless static, which holds
# CA certificates (for vkllm pull) and the nonroot user, and no shell.
FROM gcr.io/distroless/static-debian12:nonroot AS cpu
COPY --from=build /out/vkllm /usr/local/bin/vkllm
COPY --from=build --chown=65532:65532 /out/models /models
ENV XDG_CACHE_HOME=/tmp/cache
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/vkllm"]
CMD ["serve", "--addr", "0.0.0.0:8080", "--backend", "cpu", "--model", "smollm2=/models/SmolLM2-135M-Instruct.Q4_1.gguf"]
