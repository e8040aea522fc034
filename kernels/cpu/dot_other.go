//go:build !amd64 || purego

package cpu

// hasAVX2 is false: this build uses the pure-Go kernels of dot.go.
const hasAVX2 = false

// packedSets is empty: this build has no packed kernels.
func packedSets() []packedSet { return nil }

// tileF16x4AVX2 and tileBF16x4AVX2 are nil: no assembly in this build.
var tileF16x4AVX2, tileBF16x4AVX2 tileHalfFunc
