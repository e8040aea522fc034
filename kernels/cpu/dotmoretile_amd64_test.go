//go:build amd64 && !purego

package cpu

import "testing"

// TestMoreTilesBitwiseAVX2 is TestMoreTilesBitwise with the AVX2 tile
// kernels and packed set where the CPU would take the VNNI ones (which
// pack IQ4_NL and IQ4_XS; the AVX2 set does not, so their tiles run).
func TestMoreTilesBitwiseAVX2(t *testing.T) {
	if !hasVNNI {
		t.Skip("no AVX-512 VNNI: TestMoreTilesBitwise runs the AVX2 kernels")
	}
	s, u, o, m, k8, p := q8Tile4, q8Tile4U, q8Tile4Ones, q8Tile4M, minsK8x4, packed
	defer func() { q8Tile4, q8Tile4U, q8Tile4Ones, q8Tile4M, minsK8x4, packed = s, u, o, m, k8, p }()
	moreTilesAVX2()
	usePacked(packedAVX2())
	moreTilesBitwise(t)
}
