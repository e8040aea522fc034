package gguf

import (
	"fmt"

	"github.com/vkllm/vkllm/internal/mmap"
)

// Open maps a GGUF file read-only (reading it into memory where mapping is
// missing) and parses it. Tensor data are views of the mapping, valid until
// Close.
func Open(path string) (*File, error) {
	data, unmap, err := mmap.Map(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	f, err := parse(data, path)
	if err != nil {
		unmap()
		return nil, err
	}
	f.unmap = unmap
	return f, nil
}
