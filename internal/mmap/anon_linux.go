//go:build linux

package mmap

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Anon returns size bytes of zeroed anonymous memory outside the Go heap,
// asked to be backed by transparent huge pages (MADV_HUGEPAGE; on a
// kernel in THP "madvise" mode nothing else gets them), and the function
// that releases it. Large read-mostly buffers streamed from memory (packed
// weights) then take one TLB entry per 2 MiB instead of per 4 KiB. Where
// the mapping fails it falls back to the Go heap (release then does
// nothing), so it cannot fail.
func Anon(size int) ([]byte, func() error) {
	if size <= 0 {
		return []byte{}, func() error { return nil }
	}
	const huge = 2 << 20
	raw, err := unix.Mmap(-1, 0, size+huge, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return make([]byte, size), func() error { return nil }
	}
	off := 0
	if a := uintptr(unsafe.Pointer(&raw[0])) % huge; a != 0 {
		off = int(huge - a)
	}
	b := raw[off : off+size : off+size]
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE) // a hint: without THP the memory still works
	return b, func() error { return unix.Munmap(raw) }
}
