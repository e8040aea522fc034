package synth

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/tensor"
	"github.com/vkllm/vkllm/tensor/gguf"
)

// layoutWant is what llama-quantize writes for one shape and file type,
// spelled out by hand from src/llama-quant.cpp (not computed by the code
// under test): the dtype of each role, and of attn_v and ffn_down in the
// layers that get more bits and in the others.
type layoutWant struct {
	spec               string
	embd, output       tensor.DType // output Invalid: tied, no output.weight
	plain              tensor.DType // attn_q, attn_k, attn_output, ffn_gate, ffn_up
	v, vMore           tensor.DType
	down, downMore     tensor.DType
	more               []int // the layers use_more_bits picks
	fileType, nTensors int
}

var (
	more24 = []int{0, 1, 2, 5, 8, 11, 14, 17, 20, 21, 22, 23}
	more16 = []int{0, 1, 4, 7, 10, 13, 14, 15}
	more28 = []int{0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27}
	more32 = []int{0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31}
)

const (
	q4k, q5k, q6k, q50, q51, q80, none = tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.Q5_0, tensor.Q5_1, tensor.Q8_0, tensor.Invalid
	iq4xs, iq4nl                       = tensor.IQ4_XS, tensor.IQ4_NL
)

var layoutWants = []layoutWant{
	// The 0.5B's rows of 896 are not whole 256-blocks: its K-quants fall
	// back (Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0) but ffn_down's rows
	// of 4864 keep them.
	{"qwen2.5-0.5b:Q4_K_M", q80, none, q50, q50, q80, q4k, q6k, more24, 15, 290},
	{"qwen2.5-0.5b:Q5_K_M", q80, none, q51, q51, q80, q5k, q6k, more24, 17, 290},
	{"llama-3.2-1b:Q4_K_M", q6k, none, q4k, q4k, q6k, q4k, q6k, more16, 15, 147},
	{"llama-3.2-1b:Q5_K_M", q6k, none, q5k, q5k, q6k, q5k, q6k, more16, 17, 147},
	{"qwen3-0.6b:Q4_K_M", q6k, none, q4k, q4k, q6k, q4k, q6k, more28, 15, 310},
	{"qwen3-0.6b:Q5_K_M", q6k, none, q5k, q5k, q6k, q5k, q6k, more28, 17, 310},
	// Untied: the embedding is the base type, the output Q6_K.
	{"llama-3.1-8b:Q4_K_M", q4k, q6k, q4k, q4k, q6k, q4k, q6k, more32, 15, 292},
	// The tiny scale: 2 layers (layer 1 gets more bits), rows of 256 and 512.
	{"qwen2.5-0.5b-tiny:Q4_K_M", q6k, none, q4k, q4k, q6k, q4k, q6k, []int{1}, 15, 26},
	{"llama-3.2-1b-tiny:Q5_K_M", q6k, none, q5k, q5k, q6k, q5k, q6k, []int{1}, 17, 21},
	{"qwen3-0.6b-tiny:Q4_K_M", q6k, none, q4k, q4k, q6k, q4k, q6k, []int{1}, 15, 24},
	{"qwen3-0.6b-tiny:Q5_K_M", q6k, none, q5k, q5k, q6k, q5k, q6k, []int{1}, 17, 24},
	// IQ4_XS: attn_v is Q5_K in every layer with 4 or more query heads a
	// KV head (14/2, 32/8; not 16/8, nor the tiny shapes' 2), ffn_down Q5_K
	// in the first eighth of the layers ("more" below). The 0.5B's 896-wide
	// rows fall back: IQ4_XS to IQ4_NL, Q5_K to Q5_1, Q6_K to Q8_0.
	{"qwen2.5-0.5b:IQ4_XS", q80, none, iq4nl, q51, q51, iq4xs, q5k, []int{0, 1, 2}, 30, 290},
	{"llama-3.2-1b:IQ4_XS", q6k, none, iq4xs, q5k, q5k, iq4xs, q5k, []int{0, 1}, 30, 147},
	{"qwen3-0.6b:IQ4_XS", q6k, none, iq4xs, iq4xs, iq4xs, iq4xs, q5k, []int{0, 1, 2}, 30, 310},
	{"llama-3.1-8b:IQ4_XS", iq4xs, q6k, iq4xs, q5k, q5k, iq4xs, q5k, []int{0, 1, 2, 3}, 30, 292},
	{"qwen2.5-0.5b-tiny:IQ4_XS", q6k, none, iq4xs, iq4xs, iq4xs, iq4xs, iq4xs, nil, 30, 26},
	{"llama-3.2-1b-tiny:IQ4_XS", q6k, none, iq4xs, iq4xs, iq4xs, iq4xs, iq4xs, nil, 30, 21},
	{"qwen3-0.6b-tiny:IQ4_XS", q6k, none, iq4xs, iq4xs, iq4xs, iq4xs, iq4xs, nil, 30, 24},
}

// check compares tensors ts (names, dtypes) with w.
func (w layoutWant) check(t *testing.T, ts []tensor.Tensor) {
	t.Helper()
	if len(ts) != w.nTensors {
		t.Errorf("%d tensors, want %d", len(ts), w.nTensors)
	}
	sawOutput := false
	for _, tn := range ts {
		if len(tn.Shape) != 2 {
			if tn.DType != tensor.F32 {
				t.Errorf("%s: %v, want F32", tn.Name, tn.DType)
			}
			continue
		}
		var want tensor.DType
		var layer int
		var role string
		if _, err := fmt.Sscanf(tn.Name, "blk.%d.", &layer); err == nil {
			role = strings.TrimSuffix(strings.TrimPrefix(tn.Name, fmt.Sprintf("blk.%d.", layer)), ".weight")
		} else {
			role = strings.TrimSuffix(tn.Name, ".weight")
		}
		more := slices.Contains(w.more, layer)
		switch role {
		case "token_embd":
			want = w.embd
		case "output":
			want, sawOutput = w.output, true
		case "attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up":
			want = w.plain
		case "attn_v":
			want = w.v
			if more {
				want = w.vMore
			}
		case "ffn_down":
			want = w.down
			if more {
				want = w.downMore
			}
		default:
			t.Errorf("unexpected matrix %s", tn.Name)
			continue
		}
		if tn.DType != want {
			t.Errorf("%s: %v, want %v", tn.Name, tn.DType, want)
		}
	}
	if sawOutput != (w.output != none) {
		t.Errorf("output.weight present %v, want %v", sawOutput, w.output != none)
	}
}

// TestLayoutRules: the full shapes' plans under each layout give every
// tensor the dtype llama-quantize gives it (the hand-written table above).
func TestLayoutRules(t *testing.T) {
	for _, w := range layoutWants {
		t.Run(w.spec, func(t *testing.T) {
			s, q, err := ParseSpec(w.spec)
			if err != nil {
				t.Fatal(err)
			}
			ts, err := Plan(s, q)
			if err != nil {
				t.Fatal(err)
			}
			w.check(t, ts)
		})
	}
}

// TestLayoutFiles writes each layout at the tiny scale, and the 0.5B's
// fallbacks in one layer of its real width, to a file, reads it back (the
// dtypes as the table says, general.file_type llama.cpp's
// LLAMA_FTYPE_MOSTLY_Q4_K_M, _Q5_K_M or _IQ4_XS), opens it on the fast CPU backend
// and on the reference one and decodes: finite logits, not all equal, and
// the two backends' close.
func TestLayoutFiles(t *testing.T) {
	type file struct {
		s Shape
		q Quant
		w layoutWant
	}
	var files []file
	for _, w := range layoutWants {
		if strings.Contains(w.spec, "-tiny:") {
			s, q, err := ParseSpec(w.spec)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, file{s, q, w})
		}
	}
	narrow, gqa4 := narrowShape(), gqa4Shape()
	files = append(files,
		file{narrow, Quant{tensor.Q4_K, "Q4_K_M"}, layoutWant{"qwen2.5-0.5b-1layer:Q4_K_M", q80, none, q50, q50, q80, q4k, q6k, []int{0}, 15, 14}},
		file{narrow, Quant{tensor.Q5_K, "Q5_K_M"}, layoutWant{"qwen2.5-0.5b-1layer:Q5_K_M", q80, none, q51, q51, q80, q5k, q6k, []int{0}, 17, 14}},
		// 1/8 of one layer is none: ffn_down stays IQ4_XS; attn_v (GQA 7) Q5_K, falling back to Q5_1.
		file{narrow, Quant{tensor.IQ4_XS, "IQ4_XS"}, layoutWant{"qwen2.5-0.5b-1layer:IQ4_XS", q80, none, iq4nl, q51, q51, iq4xs, iq4xs, nil, 30, 14}})
	// IQ4_XS's attn_v and layer 0's ffn_down are Q5_K.
	files = append(files, file{gqa4, Quant{tensor.IQ4_XS, "IQ4_XS"}, layoutWant{"llama-3.2-1b-tiny-8layers-gqa4:IQ4_XS", q6k, none, iq4xs, q5k, q5k, iq4xs, q5k, []int{0}, 30, 75}})
	for _, f := range files {
		s, q, w := f.s, f.q, f.w
		t.Run(w.spec, func(t *testing.T) {
			m, err := Build(s, q, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "model.gguf")
			if err := m.WriteFile(path); err != nil {
				t.Fatal(err)
			}
			g, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			w.check(t, g.Tensors())
			if ft, ok := g.Int("general.file_type"); !ok || int(ft) != w.fileType || g.FileType() != q.Layout {
				t.Errorf("general.file_type %d (%s), want %d (%s)", ft, g.FileType(), w.fileType, q.Layout)
			}
			g.Close()
			// Random blocks dequantise to weights of order 0.02.
			for _, tn := range m.Tensors {
				if randomBlocks[tn.DType] == nil {
					continue
				}
				x := make([]float32, tn.NumElements())
				if err := tensor.Dequantize(tn.DType, tn.Data, x); err != nil {
					t.Fatal(err)
				}
				var ss, mx float64
				for _, v := range x {
					ss += float64(v) * float64(v)
					mx = max(mx, math.Abs(float64(v)))
				}
				if sd := math.Sqrt(ss / float64(len(x))); sd < 0.003 || sd > 0.05 || mx > 0.2 {
					t.Errorf("%s %v: rms %.4f, max |w| %.4f, want weights of order 0.02", tn.Name, tn.DType, sd, mx)
				}
			}

			// The fast CPU path against the exact reference on every
			// position's logits: the bound models/iq4_test.go holds a model
			// of one quantised type to.
			fast, ref := decodeFile(t, path, "cpu"), decodeFile(t, path, "cpu-ref")
			var num, den float64
			for i, want := range ref {
				d := float64(fast[i]) - float64(want)
				num, den = num+d*d, den+float64(want)*float64(want)
			}
			t.Logf("NMSE cpu vs cpu-ref %.3g over %d logits", num/den, len(ref))
			if !(num/den < 1e-3) {
				t.Errorf("NMSE cpu vs cpu-ref %.3g, want < 1e-3", num/den)
			}
		})
	}
}

// narrowShape is one layer of the 0.5B at its real width (rows of 896
// and 4864: llama.cpp's fallbacks) with a 256-token vocabulary; that one
// layer gets more bits in Q4_K_M and Q5_K_M, but is not in IQ4_XS's first
// eighth.
func narrowShape() Shape {
	s, _ := Lookup("qwen2.5-0.5b")
	s.Name += "-1layer"
	s.Layers, s.Vocab = 1, 256
	return s
}

// gqa4Shape is eight tiny Llama layers with 4 query heads a KV head: in
// IQ4_XS, attn_v is Q5_K and so is layer 0's ffn_down.
func gqa4Shape() Shape {
	s, _ := Lookup("llama-3.2-1b-tiny")
	s.Name += "-8layers-gqa4"
	s.Layers, s.Heads = 8, 4*s.KVHeads
	s.Hidden = s.Heads * s.HeadDim
	return s
}

// decodeFile opens the model at path on backend and decodes 8 tokens: the
// logits of every position, checked finite and not all equal.
func decodeFile(t *testing.T, path, backend string) []float32 {
	t.Helper()
	mod, err := models.Open(context.Background(), path, models.WithBackendName(backend, kernels.Options{Threads: 2}))
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close()
	ctx, err := mod.NewContext(models.ContextParams{ContextLen: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	var b models.Batch
	for i, tok := range []int32{1, 2, 3, 4, 5, 6, 7, 8} {
		b.Add(tok, int32(i), true, 0)
	}
	if err := ctx.Decode(b); err != nil {
		t.Fatal(err)
	}
	var logits []float32
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
	for i := range 8 {
		for _, v := range ctx.Logits(i) {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("%s: logit %v at %d", backend, v, i)
			}
			lo, hi = min(lo, v), max(hi, v)
			logits = append(logits, v)
		}
	}
	if !(hi > lo) {
		t.Fatalf("%s: logits all %v", backend, lo)
	}
	return logits
}
