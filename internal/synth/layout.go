package synth

import (
	"fmt"
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
	Layout string // "" (one dtype), "Q4_K_M", "Q5_K_M" or "IQ4_XS"
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
	"IQ4_XS": {tensor.IQ4_XS, 30},
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
// that dtype, or its fallback (below) where its blocks do not divide the
// rows, as llama-quantize --pure; Q4_K falls back to Q4_0 instead (as
// before layouts). For a layout, llama.cpp's rules for dense models
// (llama_tensor_get_type in src/llama-quant.cpp, no imatrix, no
// overrides):
//
//   - the output matrix, and the token embedding when it is tied to it
//     (there is no output.weight), is Q6_K, or Q8_0 where the base type's
//     blocks do not divide its rows;
//   - attn_v is Q6_K in the layers useMoreBits picks (Q4_K_M and Q5_K_M),
//     and Q5_K in every layer when there are at least 4 query heads a KV
//     head (IQ4_XS: Llama-3.2-1B's 32/8, Qwen2.5-0.5B's 14/2, not
//     Qwen3-0.6B's 16/8);
//   - ffn_down is Q6_K in the layers useMoreBits picks (Q4_K_M and
//     Q5_K_M), and Q5_K in the first eighth of the layers (IQ4_XS; with an
//     imatrix llama.cpp keeps those IQ4_XS);
//   - every other matrix (attn_q, attn_k, attn_output, ffn_gate, ffn_up,
//     an untied token embedding) is the base type;
//
// and then each falls back where its blocks do not divide the rows.
func (q Quant) matrixType(s Shape, m matrix) tensor.DType {
	if q.Layout == "" {
		if q.DType == tensor.Q4_K && m.cols%q.DType.BlockSize() != 0 {
			return tensor.Q4_0
		}
		return fallback(q.DType, m.cols)
	}
	t := q.DType
	kQuantM := q.Layout == "Q4_K_M" || q.Layout == "Q5_K_M"
	switch {
	case m.role == "output" || (m.role == "token_embd" && s.Tied):
		if m.cols%q.DType.BlockSize() != 0 {
			t = tensor.Q8_0
		} else {
			t = tensor.Q6_K
		}
	case m.role == "attn_v" && kQuantM && useMoreBits(m.layer, s.Layers):
		t = tensor.Q6_K
	case m.role == "attn_v" && q.Layout == "IQ4_XS" && s.Heads >= 4*s.KVHeads:
		t = tensor.Q5_K
	case m.role == "ffn_down" && kQuantM && useMoreBits(m.layer, s.Layers):
		t = tensor.Q6_K
	case m.role == "ffn_down" && q.Layout == "IQ4_XS" && m.layer < s.Layers/8:
		t = tensor.Q5_K
	}
	return fallback(t, m.cols)
}

// fallback is t, or where t's blocks do not divide rows of cols values the
// type llama.cpp's tensor_type_fallback gives instead: IQ4_XS to IQ4_NL,
// Q2_K and Q3_K to Q4_0, Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0 (the
// Qwen2.5-0.5B shape's 896-wide rows). A type without one is kept (Plan
// then refuses the shape).
func fallback(t tensor.DType, cols int) tensor.DType {
	if cols%t.BlockSize() == 0 {
		return t
	}
	switch t {
	case tensor.IQ4_XS:
		return tensor.IQ4_NL
	case tensor.Q2_K, tensor.Q3_K:
		return tensor.Q4_0
	case tensor.Q4_K:
		return tensor.Q5_0
	case tensor.Q5_K:
		return tensor.Q5_1
	case tensor.Q6_K:
		return tensor.Q8_0
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
