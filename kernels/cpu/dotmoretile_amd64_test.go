//go:build amd64 && !purego

package cpu

import "testing"

// TestMoreTilesBitwiseAVX2 is TestMoreTilesBitwise with the AVX2 tile
// kernels where the CPU would take the VNNI ones.
func TestMoreTilesBitwiseAVX2(t *testing.T) {
	if !hasVNNI {
		t.Skip("no AVX-512 VNNI: TestMoreTilesBitwise runs the AVX2 kernels")
	}
	s, u, o, m, k8 := q8Tile4, q8Tile4U, q8Tile4Ones, q8Tile4M, minsK8x4
	defer func() { q8Tile4, q8Tile4U, q8Tile4Ones, q8Tile4M, minsK8x4 = s, u, o, m, k8 }()
	moreTilesAVX2()
	moreTilesBitwise(t)
}
