package synth

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/vkllm/vkllm/tensor"
)

// Quant is what a model's matrices are: one dtype for every matrix, or a
// layout, the per-tensor mix of dtypes llama.cpp's llama-quantize writes
// for a file type such as Q4_K_M (the files people download).
type Quant struct {
	// DType is every matrix's dtype, or the layout's base dtype (Q4_K for
	// Q4_K_M): the one the matrices without a rule of their own get.
	DType  tensor.DType
	Layout string // "" (one dtype), "Q4_K_M" or "Q5_K_M"
}

// Uniform is the Quant of matrices all of dtype dt.
func Uniform(dt tensor.DType) Quant { return Quant{DType: dt} }

func (q Quant) String() string {
	if q.Layout != "" {
		return q.Layout
	}
	return q.DType.String()
}

// layouts are the llama-quantize file types Build writes: the base dtype
// and general.file_type (llama_ftype) of each.
var layouts = map[string]struct {
	base     tensor.DType
	fileType uint32
}{
	"Q4_K_M": {tensor.Q4_K, 15},
	"Q5_K_M": {tensor.Q5_K, 17},
}

// Layouts lists the layout names ParseSpec accepts after SHAPE:, sorted.
func Layouts() []string {
	names := make([]string, 0, len(layouts))
	for n := range layouts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// parseLayout reads a layout name, case-insensitively.
func parseLayout(name string) (Quant, bool) {
	n := strings.ToUpper(name)
	l, ok := layouts[n]
	return Quant{DType: l.base, Layout: n}, ok
}

// fileType is q's general.file_type.
func (q Quant) fileType() uint32 {
	if q.Layout != "" {
		return layouts[q.Layout].fileType
	}
	return fileTypes[q.DType]
}

// matrix says which matrix a tensor is, for the layout rules: its role
// (the name without "blk.N." and ".weight"), its layer (-1 outside the
// layers) and its row length.
type matrix struct {
	role  string
	layer int
	cols  int
}

// matrixType is the dtype of matrix m of shape s under q. For one dtype,
// that dtype (Q4_0 for Q4_K where its 256-blocks do not divide the rows,
// as before layouts). For a layout, llama.cpp's rules for dense models
// (llama_tensor_get_type in src/llama-quant.cpp, no imatrix, no
// overrides):
//
//   - the output matrix, and the token embedding when it is tied to it
//     (there is no output.weight), is Q6_K, or Q8_0 where the base type's
//     blocks do not divide its rows;
//   - attn_v is Q6_K in the layers useMoreBits picks (Q4_K_M and Q5_K_M);
//   - ffn_down is Q6_K in those layers too (Q4_K_M and Q5_K_M);
//   - every other matrix (attn_q, attn_k, attn_output, ffn_gate, ffn_up,
//     an untied token embedding) is the base type;
//
// and then a K-quant whose 256-blocks do not divide the rows falls back as
// llama.cpp's tensor_type_fallback does: Q4_K to Q5_0, Q5_K to Q5_1, Q6_K
// to Q8_0 (the Qwen2.5-0.5B shape's 896-wide rows).
func (q Quant) matrixType(s Shape, m matrix) tensor.DType {
	if q.Layout == "" {
		if q.DType == tensor.Q4_K && m.cols%q.DType.BlockSize() != 0 {
			return tensor.Q4_0
		}
		return q.DType
	}
	t := q.DType
	switch {
	case m.role == "output" || (m.role == "token_embd" && s.Tied):
		if m.cols%q.DType.BlockSize() != 0 {
			t = tensor.Q8_0
		} else {
			t = tensor.Q6_K
		}
	case m.role == "attn_v" || m.role == "ffn_down":
		if useMoreBits(m.layer, s.Layers) {
			t = tensor.Q6_K
		}
	}
	if m.cols%t.BlockSize() != 0 {
		switch t {
		case tensor.Q4_K:
			t = tensor.Q5_0
		case tensor.Q5_K:
			t = tensor.Q5_1
		case tensor.Q6_K:
			t = tensor.Q8_0
		}
	}
	return t
}

// useMoreBits is llama.cpp's choice of the layers that get more bits: the
// first and last eighth, and every third layer between.
func useMoreBits(layer, layers int) bool {
	return layer < layers/8 || layer >= 7*layers/8 || (layer-layers/8)%3 == 2
}

// parseQuant reads a dtype or layout name.
func parseQuant(name string) (Quant, error) {
	if q, ok := parseLayout(name); ok {
		return q, nil
	}
	dt, err := parseDType(name)
	if err != nil {
		return Quant{}, fmt.Errorf("%w (or a layout: %s)", err, strings.Join(Layouts(), ", "))
	}
	return Uniform(dt), nil
}

// checkQuant checks that Build can make q.
func checkQuant(q Quant) error {
	if q.Layout != "" {
		if l, ok := layouts[q.Layout]; !ok || l.base != q.DType {
			return fmt.Errorf("%w: layout %q with base %v (layouts: %s)", ErrDType, q.Layout, q.DType, strings.Join(Layouts(), ", "))
		}
		return nil
	}
	_, err := parseDType(q.DType.String())
	return err
}

// randomQ5K fills whole Q5_K blocks (d f16 | dmin f16 | scales [12]u8 |
// qh [32]u8 | qs [128]u8) with random scales, mins and 5-bit values under
// d = 0.01/256 and dmin = 0.01/256: values of order 0.02.
func randomQ5K(r *rand.Rand, dst []byte) {
	d, dmin := f16(0.01/256), f16(0.01/256)
	const size = 176
	for b := 0; b+size <= len(dst); b += size {
		blk := dst[b : b+size]
		randomBytes(r, blk[4:])
		copy(blk[0:2], d[:])
		copy(blk[2:4], dmin[:])
	}
}

// randomQ6K fills whole Q6_K blocks (ql [128]u8 | qh [64]u8 | scales
// [16]i8 | d f16) with random 6-bit values and scales in [-16, 15] under
// d = 0.02/256: values of order 0.02.
func randomQ6K(r *rand.Rand, dst []byte) {
	d := f16(0.02 / 256)
	const size = 210
	for b := 0; b+size <= len(dst); b += size {
		blk := dst[b : b+size]
		randomBytes(r, blk[:208])
		for i := 192; i < 208; i++ {
			blk[i] = byte(int8(blk[i]&31) - 16)
		}
		copy(blk[208:210], d[:])
	}
}

func randomBytes(r *rand.Rand, dst []byte) {
	for i := 0; i < len(dst); i += 8 {
		u := r.Uint64()
		for k := range min(8, len(dst)-i) {
			dst[i+k] = byte(u >> (8 * k))
		}
	}
}

// f16 is x as IEEE half-precision bytes.
func f16(x float32) [2]byte {
	var b [2]byte
	_ = tensor.Quantize(tensor.F16, []float32{x}, b[:])
	return b
}
