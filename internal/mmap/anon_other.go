//go:build !linux

package mmap

// Anon returns size bytes of zeroed memory (from the Go heap here) and a
// release function that does nothing.
func Anon(size int) ([]byte, func() error) {
	return make([]byte, max(size, 0)), func() error { return nil }
}
