//go:build ignore

// gen compiles every variant of shaders.Variants with glslc into spv/.
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
		cmd := exec.Command("glslc", shaders.GlslcArgs(v, out)...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			log.Fatalf("%s: %v", v.Name, err)
		}
	}
}
