package kerneltest

import (
	"testing"

	"github.com/vkllm/vkllm/kernels"
)

// MatMulPrefill is MatMul at prefill sizes: n in {16, 37} tokens (a
// backend's tiled kernel takes many tokens at once, and 37 is no multiple
// of a tile), m in {24, 45} (odd multiples of 8 rows and not) and the odd
// row lengths of MatMul, for every weight dtype, with MatMul's limits. It
// then checks batch invariance bitwise: every row of a 37-token product
// (m 24 and 45) equals the same row multiplied alone.
func MatMulPrefill(t *testing.T, b kernels.Backend) { matMul(t, b, false, prefillSizes) }

// MatMulPrefillStrict is MatMulPrefill with LimitF32Dot for every dtype
// (see MatMulStrict); it checks batch invariance too.
func MatMulPrefillStrict(t *testing.T, b kernels.Backend) { matMul(t, b, true, prefillSizes) }

var prefillSizes = func() matMulSizes {
	s := matMulSizes{seed: 80, ns: []int{16, 37}, ms: []int{24, 45}, invN: 37, invMs: []int{24, 45}, invStrict: true}
	for i := range s.invN {
		s.parts = append(s.parts, [2]int{i, i + 1})
	}
	return s
}()
