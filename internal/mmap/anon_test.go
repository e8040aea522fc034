package mmap

import "testing"

// Anon gives zeroed, writable memory of the size asked, released once.
func TestAnon(t *testing.T) {
	for _, size := range []int{0, 1, 4096, 3<<20 + 5} {
		b, release := Anon(size)
		if len(b) != size || cap(b) != size {
			t.Fatalf("Anon(%d): len %d cap %d", size, len(b), cap(b))
		}
		for i := range b {
			if b[i] != 0 {
				t.Fatalf("Anon(%d): byte %d is %d", size, i, b[i])
			}
			b[i] = byte(i)
		}
		for i := range b {
			if b[i] != byte(i) {
				t.Fatalf("Anon(%d): byte %d reads %d", size, i, b[i])
			}
		}
		if err := release(); err != nil {
			t.Fatal(err)
		}
	}
}
