//go:build !amd64 || purego

package cpu

// hasAVX2 is false: this build uses the pure-Go kernels of dot.go.
const hasAVX2 = false

// packedSets is empty: this build has no packed kernels.
func packedSets() []packedSet { return nil }
