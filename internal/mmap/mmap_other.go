//go:build !unix

package mmap

func Map(path string) ([]byte, func() error, error) { return ReadAll(path) }
