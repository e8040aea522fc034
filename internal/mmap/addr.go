package mmap

import "unsafe"

// addr is the address of b's first byte (b not empty).
func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }
