// Package mmap maps files read-only, falling back to reading them into
// memory where mapping is missing.
package mmap

import "os"

// ReadAll is the fallback: the file read into memory.
func ReadAll(path string) ([]byte, func() error, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return data, func() error { return nil }, nil
}
