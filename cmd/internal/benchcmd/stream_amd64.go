//go:build amd64 && !purego

package benchcmd

import "golang.org/x/sys/cpu"

//go:noescape
func streamRead(p *byte, n int) uint64

//go:noescape
func streamRead4(p *byte, n int) uint64

// readAll XORs b (a multiple of 256 bytes long) into one word, as fast
// as this CPU reads memory: AVX2 assembly with software prefetch where
// there is AVX2, else readAllGo.
func readAll(b []byte) uint64 {
	if !cpu.X86.HasAVX2 || len(b) == 0 {
		return readAllGo(b)
	}
	return streamRead(&b[0], len(b))
}

// readAll4 is readAll reading b's four quarters side by side (the
// one-row packed decode kernels' access); readAll where there is no
// AVX2.
func readAll4(b []byte) uint64 {
	if !cpu.X86.HasAVX2 || len(b) == 0 {
		return readAllGo(b)
	}
	return streamRead4(&b[0], len(b))
}
