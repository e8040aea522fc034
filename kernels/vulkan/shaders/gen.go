//go:build ignore

// gen compiles every variant of shaders.Variants with glslc into spv/
// (the cooperative-matrix and integer-dot ones with $VKLLM_GLSLC: see
// shaders.Glslc).
// Run with `go generate` in kernels/vulkan/shaders.
package main

import (
	"log"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/vkllm/vkllm/kernels/vulkan/shaders"
)

func main() {
	if err := os.MkdirAll("spv", 0o755); err != nil {
		log.Fatal(err)
	}
	for _, v := range shaders.Variants {
		out := filepath.Join("spv", v.Name+".spv")
		cmd := exec.Command(shaders.Glslc(v), shaders.GlslcArgs(v, out)...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			if v.Coop || v.IntDot {
				log.Fatalf("%s: %v (it needs a glslc with GL_KHR_cooperative_matrix and GL_EXT_integer_dot_product: set VKLLM_GLSLC, see tools/lavapipe-coopmat.sh)", v.Name, err)
			}
			log.Fatalf("%s: %v", v.Name, err)
		}
	}
}
