package hub_test

import (
	"context"
	"fmt"
	"log"

	"github.com/vkllm/vkllm/hub"
)

// A program resolves a model name before opening it; a local path comes
// back as it is, a Hub name is pulled into the cache first.
func ExampleResolve() {
	path, err := hub.Resolve(context.Background(), "hf://Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(path) // …/models--Qwen--Qwen2.5-0.5B-Instruct-GGUF/snapshots/COMMIT/qwen2.5-0.5b-instruct-q4_k_m.gguf
}

// A Client reports a pull's progress over all its files.
func ExampleClient_Pull() {
	c := hub.FromEnv()
	c.Progress = func(done, total int64) { fmt.Printf("\r%d/%d bytes", done, total) }
	r, err := hub.Parse("hf://bartowski/Llama-3.2-1B-Instruct-GGUF:q8_0")
	if err != nil {
		log.Fatal(err)
	}
	m, err := c.Pull(context.Background(), r)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Path, m.Files)
}
