package main

import (
	"github.com/vkllm/vkllm/tensor/gguf"
	"github.com/vkllm/vkllm/tokenizer"
)

// loadGGUF reads the tokenizer stored in a GGUF file's metadata.
func loadGGUF(path string) (*tokenizer.Tokenizer, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return tokenizer.FromGGUF(f)
}
